package memdev

import (
	"bytes"
	"errors"
	"syscall"
	"testing"

	"ustore/dev"
)

// checkInjectedEIO checks that err is an injected EIO as a medium reports it.
func checkInjectedEIO(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, dev.ErrIO) || !errors.Is(err, syscall.EIO) || !errors.Is(err, ErrInjected) {
		t.Errorf("%s: got %v, want an injected EIO matching dev.ErrIO, syscall.EIO and ErrInjected", what, err)
	}
}

// TestDevice_InjectError_NthWrite: the third write from now — the middle IO
// of a five-IO batch, after two earlier writes — fails; the others of the
// batch succeed, and the failed one changes neither the data nor what a crash
// can keep.
func TestDevice_InjectError_NthWrite(t *testing.T) {
	d := New(8 * s)
	write(t, d, 2*s, s, 0xee) // before the injection: not counted
	d.InjectError(OpWrite, 3, syscall.EIO)
	write(t, d, 7*s, s, 0x07) // write 1 from now
	ios := make([]dev.IO, 5)  // writes 2..6 from now; io 1 is write 3
	for i := range ios {
		ios[i] = dev.IO{Off: int64(i) * s, Buf: filled(s, byte(0x10+i))}
	}
	err := d.Write(ios)
	checkInjectedEIO(t, "Write", err)
	for i, io := range ios {
		if (io.Err != nil) != (i == 1) {
			t.Errorf("io %d: Err = %v", i, io.Err)
		}
	}
	if ios[1].Err != err {
		t.Errorf("Write returned %v, not the failed IO's Err %v", err, ios[1].Err)
	}
	if got, want := sectorBytes(t, d, 5), []byte{0x10, 0, 0x12, 0x13, 0x14}; !bytes.Equal(got, want) {
		t.Errorf("volatile data = %#v, want %#v (the failed write changed nothing)", got, want)
	}
	if got, want := sectorBytes(t, d.Crash(KeepAll()), 5), []byte{0x10, 0, 0x12, 0x13, 0x14}; !bytes.Equal(got, want) {
		t.Errorf("crash keeping all = %#v, want %#v", got, want)
	}
	for _, w := range d.Unflushed() {
		if w.Off == s {
			t.Errorf("the failed write is unflushed: %+v", w)
		}
	}
	var failed []Op
	for _, op := range d.Ops() {
		if op.Err != nil {
			failed = append(failed, op)
		}
	}
	if len(failed) != 1 || failed[0].Kind != OpWrite || failed[0].Off != s {
		t.Errorf("failed ops = %+v, want the write at %d", failed, s)
	}
	// One-shot: the next write succeeds.
	write(t, d, s, s, 0x11)
}

// TestDevice_InjectError_NthRead: a failed read sets its own IO's Err and
// leaves its buffer untouched; the other IOs of the batch are filled.
func TestDevice_InjectError_NthRead(t *testing.T) {
	d := New(8 * s)
	write(t, d, 0, 3*s, 0x33)
	d.InjectError(OpRead, 2, syscall.EIO)
	ios := []dev.IO{
		{Off: 0, Buf: filled(s, 0xa5)},
		{Off: s, Buf: filled(s, 0xa5)},
		{Off: 2 * s, Buf: filled(s, 0xa5)},
	}
	checkInjectedEIO(t, "Read", d.Read(ios))
	for i, want := range []byte{0x33, 0xa5, 0x33} {
		if ios[i].Buf[0] != want {
			t.Errorf("io %d: buffer byte %#x, want %#x", i, ios[i].Buf[0], want)
		}
		if (ios[i].Err != nil) != (i == 1) {
			t.Errorf("io %d: Err = %v", i, ios[i].Err)
		}
	}
	read(t, d, s, s) // one-shot
}

// TestDevice_InjectError_Flush: a failed flush moves nothing — a crash can
// still lose the writes — and the next flush makes them durable.
func TestDevice_InjectError_Flush(t *testing.T) {
	d := New(4 * s)
	write(t, d, 0, s, 1)
	flush(t, d)
	write(t, d, 0, s, 2)
	d.InjectError(OpFlush, 1, syscall.EIO)
	checkInjectedEIO(t, "Flush", d.Flush())
	if n := len(d.Unflushed()); n != 1 {
		t.Fatalf("%d unflushed writes after a failed flush, want 1", n)
	}
	if got := sectorByte(t, d.Crash(KeepNone()), 0); got != 1 {
		t.Errorf("crash after a failed flush: sector 0 = %#x, want the old 1", got)
	}
	flush(t, d)
	if got := sectorByte(t, d.Crash(KeepNone()), 0); got != 2 {
		t.Errorf("crash after a good flush: sector 0 = %#x, want 2", got)
	}
}

// TestDevice_FailFrom_EveryWriteUntilCleared: from the second write on,
// every write fails, until ClearErrors.
func TestDevice_FailFrom_EveryWriteUntilCleared(t *testing.T) {
	d := New(8 * s)
	d.FailFrom(OpWrite, 2, syscall.EIO)
	write(t, d, 0, s, 1)
	for i := range 3 {
		err := d.Write([]dev.IO{{Off: int64(i+1) * s, Buf: filled(s, 2)}})
		checkInjectedEIO(t, "Write after FailFrom", err)
	}
	if err := d.Flush(); err != nil {
		t.Errorf("Flush: %v (FailFrom armed writes only)", err)
	}
	d.ClearErrors()
	write(t, d, s, s, 3)
	if got, want := sectorBytes(t, d, 4), []byte{1, 3, 0, 0}; !bytes.Equal(got, want) {
		t.Errorf("data = %v, want %v", got, want)
	}
}

// TestDevice_InjectError_ErrnoAndPlain: ENOSPC matches dev.ErrNoSpace; a
// plain error is wrapped and matches itself and ErrInjected, not dev.ErrIO.
func TestDevice_InjectError_ErrnoAndPlain(t *testing.T) {
	d := New(4 * s)
	d.InjectError(OpWrite, 1, syscall.ENOSPC)
	err := d.Write([]dev.IO{{Off: 0, Buf: filled(s, 1)}})
	if !errors.Is(err, dev.ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) || !errors.Is(err, ErrInjected) {
		t.Errorf("ENOSPC: got %v", err)
	}
	plain := errors.New("plain")
	d.InjectError(OpFlush, 1, plain)
	err = d.Flush()
	if !errors.Is(err, plain) || !errors.Is(err, ErrInjected) || errors.Is(err, dev.ErrIO) {
		t.Errorf("plain error: got %v", err)
	}
}

// TestDevice_InjectError_SameOpFiresOnce: two one-shot faults on the same
// operation: the first armed fires, both are used up.
func TestDevice_InjectError_SameOpFiresOnce(t *testing.T) {
	d := New(4 * s)
	first, second := errors.New("first"), errors.New("second")
	d.InjectError(OpWrite, 1, first)
	d.InjectError(OpWrite, 1, second)
	if err := d.Write([]dev.IO{{Off: 0, Buf: filled(s, 1)}}); !errors.Is(err, first) {
		t.Errorf("got %v, want the first armed", err)
	}
	write(t, d, 0, s, 1)
	if len(d.faults) != 0 {
		t.Errorf("%d faults still armed", len(d.faults))
	}
}

// TestDevice_WriteDurable_StopsAtFailure: a failed flush ends WriteDurable
// before the next stage is written; so does a failed write.
func TestDevice_WriteDurable_StopsAtFailure(t *testing.T) {
	stages := func() [][]dev.IO {
		return [][]dev.IO{
			{{Off: 0, Buf: filled(s, 1)}, {Off: s, Buf: filled(s, 1)}},
			{{Off: 2 * s, Buf: filled(s, 2)}},
		}
	}
	for _, kind := range []OpKind{OpWrite, OpFlush} {
		d := New(4 * s)
		d.InjectError(kind, 1, syscall.EIO)
		checkInjectedEIO(t, "WriteDurable with a failing "+kind.String(), d.WriteDurable(stages()...))
		for _, op := range d.Ops() {
			if op.Kind == OpWrite && op.Off == 2*s {
				t.Errorf("failing %v: stage 2 was written: %+v", kind, d.Ops())
			}
		}
	}
}

func TestDevice_InjectError_BadArgsPanic(t *testing.T) {
	d := New(4 * s)
	for _, c := range []struct {
		kind OpKind
		n    int
		err  error
	}{
		{0, 1, syscall.EIO}, {opKindCount, 1, syscall.EIO}, {OpRead, 0, syscall.EIO}, {OpRead, 1, nil},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("InjectError(%v, %d, %v) did not panic", c.kind, c.n, c.err)
				}
			}()
			d.InjectError(c.kind, c.n, c.err)
		}()
	}
}
