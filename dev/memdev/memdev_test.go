package memdev

import (
	"bytes"
	"testing"

	"ustore/dev"
	"ustore/dev/devtest"
)

const s = dev.SectorSize

func TestDevice_Conformance(t *testing.T) {
	devtest.Run(t, func(t *testing.T, size int64) dev.Device { return New(size) })
}

// filled returns an aligned buffer of n bytes, every byte c.
func filled(n int, c byte) []byte {
	b := dev.AlignedBuffer(n)
	for i := range b {
		b[i] = c
	}
	return b
}

// write writes n bytes of c at off, failing the test on error.
func write(t *testing.T, d *Device, off int64, n int, c byte) {
	t.Helper()
	if err := d.Write([]dev.IO{{Off: off, Buf: filled(n, c)}}); err != nil {
		t.Fatalf("Write(%d, %d bytes of %#x): %v", off, n, c, err)
	}
}

// flush flushes, failing the test on error.
func flush(t *testing.T, d *Device) {
	t.Helper()
	if err := d.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

// read returns [off, off+n) of d.
func read(t *testing.T, d *Device, off int64, n int) []byte {
	t.Helper()
	b := dev.AlignedBuffer(n)
	if err := d.Read([]dev.IO{{Off: off, Buf: b}}); err != nil {
		t.Fatalf("Read(%d, %d): %v", off, n, err)
	}
	return b
}

// sectorByte returns the byte every byte of sector index holds, failing the
// test when the sector is not uniform (the tests here write whole sectors of
// one byte, so anything else is a mix-up).
func sectorByte(t *testing.T, d *Device, index int64) byte {
	t.Helper()
	b := read(t, d, index*s, s)
	for _, c := range b {
		if c != b[0] {
			t.Fatalf("sector %d is not uniform: %#x and %#x", index, b[0], c)
		}
	}
	return b[0]
}

// sectorBytes returns sectorByte of sectors [0, n).
func sectorBytes(t *testing.T, d *Device, n int) []byte {
	t.Helper()
	out := make([]byte, n)
	for i := range out {
		out[i] = sectorByte(t, d, int64(i))
	}
	return out
}

func TestNew_BadSize(t *testing.T) {
	for _, size := range []int64{0, -s, s + 512} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%d) did not panic", size)
				}
			}()
			New(size)
		}()
	}
}

func TestDevice_Backend_Memory(t *testing.T) {
	if got := New(s).Backend(); got != "memory" {
		t.Errorf("Backend() = %q, want %q", got, "memory")
	}
}

// TestDevice_Write_Sparse: a 1 GiB device stores only the sectors written.
func TestDevice_Write_Sparse(t *testing.T) {
	d := New(1 << 30)
	write(t, d, 0, s, 1)
	write(t, d, 512<<20, 2*s, 2)
	write(t, d, 1<<30-s, s, 3)
	if n := len(d.volatile); n != 4 {
		t.Errorf("volatile image holds %d sectors, want 4", n)
	}
	if got := read(t, d, 256<<20, 1<<20); !bytes.Equal(got, make([]byte, 1<<20)) {
		t.Error("never-written MiB does not read as zeros")
	}
}

// TestDevice_Ops_RecordsHistory: every IO of a batch and every flush is one
// Op with the next Seq; reads are recorded too.
func TestDevice_Ops_RecordsHistory(t *testing.T) {
	d := New(16 * s)
	if err := d.Write([]dev.IO{{Off: 0, Buf: filled(s, 1)}, {Off: 4 * s, Buf: filled(2*s, 2)}}); err != nil {
		t.Fatal(err)
	}
	read(t, d, 4*s, s)
	flush(t, d)
	want := []Op{
		{Seq: 1, Kind: OpWrite, Off: 0, Len: s},
		{Seq: 2, Kind: OpWrite, Off: 4 * s, Len: 2 * s},
		{Seq: 3, Kind: OpRead, Off: 4 * s, Len: s},
		{Seq: 4, Kind: OpFlush},
	}
	got := d.Ops()
	if len(got) != len(want) {
		t.Fatalf("Ops() = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Ops()[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	if d.Seq() != 4 {
		t.Errorf("Seq() = %d, want 4", d.Seq())
	}
}

// TestDevice_Write_RejectedBatchIsNoOp: a rejected batch gets no Seq, and
// every IO of it carries the error.
func TestDevice_Write_RejectedBatchIsNoOp(t *testing.T) {
	d := New(16 * s)
	ios := []dev.IO{{Off: 0, Buf: filled(s, 1)}, {Off: 512, Buf: filled(s, 1)}}
	err := d.Write(ios)
	if err == nil {
		t.Fatal("Write of a misaligned batch succeeded")
	}
	for i, io := range ios {
		if io.Err != err {
			t.Errorf("io %d: Err = %v, want the call's error %v", i, io.Err, err)
		}
	}
	if d.Seq() != 0 || len(d.Ops()) != 0 || len(d.Unflushed()) != 0 {
		t.Errorf("rejected batch recorded: Seq %d, Ops %v, Unflushed %d", d.Seq(), d.Ops(), len(d.Unflushed()))
	}
}

// TestDevice_Write_CopiesBuffer: the device keeps its own copy; changing
// the buffer after Write returns changes nothing.
func TestDevice_Write_CopiesBuffer(t *testing.T) {
	d := New(16 * s)
	b := filled(s, 1)
	if err := d.Write([]dev.IO{{Off: 0, Buf: b}}); err != nil {
		t.Fatal(err)
	}
	b[0] = 9
	if got := read(t, d, 0, s)[0]; got != 1 {
		t.Errorf("read %#x after the caller changed its buffer, want 1", got)
	}
	u := d.Unflushed()
	u[0].Data[0] = 9 // a copy: the device must not see this
	if got := read(t, d, 0, s)[0]; got != 1 {
		t.Errorf("read %#x after the caller changed Unflushed's data, want 1", got)
	}
}

// TestDevice_Close_KeepsData: a closed device refuses I/O but still crashes.
func TestDevice_Close_KeepsData(t *testing.T) {
	d := New(16 * s)
	write(t, d, 0, s, 1)
	flush(t, d)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	c := d.Crash(KeepNone())
	if got := sectorByte(t, c, 0); got != 1 {
		t.Errorf("crash of a closed device: sector 0 = %#x, want 1", got)
	}
}

// TestDevice_ForgetHistory_KeepsState: forgetting the history keeps the
// data, the durable image and the unflushed writes; CrashAt can still target
// the point of forgetting and later, and panics before it.
func TestDevice_ForgetHistory_KeepsState(t *testing.T) {
	d := New(16 * s)
	write(t, d, 0, s, 1)
	flush(t, d)
	write(t, d, s, s, 2)
	d.ForgetHistory()
	at := d.Seq()
	if len(d.Ops()) != 0 {
		t.Errorf("Ops() after ForgetHistory = %v, want none", d.Ops())
	}
	write(t, d, 2*s, s, 3)

	if got := sectorBytes(t, d.CrashAt(at, KeepNone()), 3); !bytes.Equal(got, []byte{1, 0, 0}) {
		t.Errorf("CrashAt(forget point, KeepNone) = %v, want [1 0 0]", got)
	}
	if got := sectorBytes(t, d.CrashAt(at, KeepAll()), 3); !bytes.Equal(got, []byte{1, 2, 0}) {
		t.Errorf("CrashAt(forget point, KeepAll) = %v, want [1 2 0]", got)
	}
	if got := sectorBytes(t, d.CrashAt(d.Seq(), KeepAll()), 3); !bytes.Equal(got, []byte{1, 2, 3}) {
		t.Errorf("CrashAt(last, KeepAll) = %v, want [1 2 3]", got)
	}
	if n := len(d.UnflushedAt(at)); n != 1 {
		t.Errorf("UnflushedAt(forget point) has %d writes, want 1", n)
	}
	defer func() {
		if recover() == nil {
			t.Error("CrashAt before the forget point did not panic")
		}
	}()
	d.CrashAt(at-1, KeepAll())
}
