package ring

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func newRing(t *testing.T, cfg Config) *Ring {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// openFile opens a fresh file of size bytes, with O_DIRECT when direct.
func openFile(t *testing.T, size int64, direct bool) *os.File {
	t.Helper()
	flags := os.O_RDWR | os.O_CREATE
	if direct {
		flags |= syscall.O_DIRECT
	}
	f, err := os.OpenFile(filepath.Join(t.TempDir(), "data"), flags, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// alignedBuf returns n bytes of 4096-aligned, random memory.
func alignedBuf(n int, seed uint64) []byte {
	b := make([]byte, n+4096)
	off := 0
	if r := uintptr(unsafe.Pointer(&b[0])) % 4096; r != 0 {
		off = int(4096 - r)
	}
	b = b[off : off+n]
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func TestABI_Layout(t *testing.T) {
	checks := []struct {
		name      string
		got, want uintptr
	}{
		{"sqe size", unsafe.Sizeof(sqe{}), 64},
		{"sqe.off", unsafe.Offsetof(sqe{}.off), 8},
		{"sqe.addr", unsafe.Offsetof(sqe{}.addr), 16},
		{"sqe.len", unsafe.Offsetof(sqe{}.len), 24},
		{"sqe.opFlags", unsafe.Offsetof(sqe{}.opFlags), 28},
		{"sqe.userData", unsafe.Offsetof(sqe{}.userData), 32},
		{"sqe.bufIndex", unsafe.Offsetof(sqe{}.bufIndex), 40},
		{"sqe.addr3", unsafe.Offsetof(sqe{}.addr3), 48},
		{"cqe size", unsafe.Sizeof(cqe{}), 16},
		{"cqe.res", unsafe.Offsetof(cqe{}.res), 8},
		{"params size", unsafe.Sizeof(params{}), 120},
		{"params.sqOff", unsafe.Offsetof(params{}.sqOff), 40},
		{"params.cqOff", unsafe.Offsetof(params{}.cqOff), 80},
		{"sqringOffsets.userAddr", unsafe.Offsetof(sqringOffsets{}.userAddr), 32},
		{"probeHeader size", unsafe.Sizeof(probeHeader{}), 16},
		{"probeOp size", unsafe.Sizeof(probeOp{}), 8},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}

func TestRing_New_Modes(t *testing.T) {
	for _, m := range []Mode{ModeAuto, ModeDeferTaskrun, ModeCoopTaskrun, ModePlain} {
		t.Run(m.String(), func(t *testing.T) {
			r := newRing(t, Config{Mode: m, Entries: 16, NoDirect: true})
			if m != ModeAuto && r.Mode() != m {
				t.Fatalf("mode %v, want %v", r.Mode(), m)
			}
			if m == ModeAuto && r.Mode() != ModeDeferTaskrun {
				t.Logf("kernel refused DEFER_TASKRUN; running %v", r.Mode())
			}
			f := openFile(t, 1<<20, false)
			buf := alignedBuf(8192, 1)
			if _, err := r.WriteAt(int(f.Fd()), buf, 4096); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 8192)
			if _, err := r.ReadAt(int(f.Fd()), got, 4096); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, buf) {
				t.Fatal("read back differs")
			}
		})
	}
}

func TestRing_New_Unavailable(t *testing.T) {
	for _, errno := range []syscall.Errno{unix.EPERM, unix.ENOSYS} {
		setupHook = func(uint32, *params) (int, syscall.Errno) { return -1, errno }
		_, err := New(Config{})
		setupHook = nil
		if !errors.Is(err, ErrUnavailable) || !errors.Is(err, errno) {
			t.Fatalf("errno %v: got %v, want ErrUnavailable wrapping it", errno, err)
		}
		t.Logf("%v", err)
	}
	// EINVAL steps down the flag chain: refuse the first two modes.
	calls := 0
	setupHook = func(entries uint32, p *params) (int, syscall.Errno) {
		calls++
		if p.flags&(setupDeferTaskrun|setupCoopTaskrun) != 0 {
			return -1, unix.EINVAL
		}
		fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(p)), 0)
		return int(fd), errno
	}
	r, err := New(Config{})
	setupHook = nil
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Mode() != ModePlain || calls != 3 {
		t.Fatalf("mode %v after %d setups, want plain after 3", r.Mode(), calls)
	}
}

func TestRing_Do_ReadWrite(t *testing.T) {
	for _, direct := range []bool{false, true} {
		for _, fixed := range []bool{false, true} {
			name := map[bool]string{false: "buffered", true: "odirect"}[direct] + "/" + map[bool]string{false: "plain", true: "fixed"}[fixed]
			t.Run(name, func(t *testing.T) {
				cfg := Config{NoDirect: true}
				if fixed {
					cfg.FixedBytes = 1 << 20
				}
				r := newRing(t, cfg)
				f := openFile(t, 4<<20, direct)
				fd := int(f.Fd())
				const n = 16
				var bufs [n][]byte
				var ops [n]Op
				var ptrs []*Op
				for i := range n {
					if fixed {
						bufs[i] = r.FixedRegion()[i*65536 : i*65536+65536]
						copy(bufs[i], alignedBuf(65536, uint64(i)))
					} else {
						bufs[i] = alignedBuf(65536, uint64(i))
					}
					ops[i] = Op{Kind: OpWrite, Fd: fd, Buf: bufs[i], Off: int64(i) * 65536}
					ptrs = append(ptrs, &ops[i])
				}
				if err := r.Do(ptrs...); err != nil {
					t.Fatal(err)
				}
				for i := range n {
					want := alignedBuf(65536, uint64(i))
					got := alignedBuf(65536, 999)
					if fixed {
						got = bufs[i]
						clear(got)
					}
					ops[i] = Op{Kind: OpRead, Fd: fd, Buf: got, Off: int64(i) * 65536}
					if err := r.Do(&ops[i]); err != nil {
						t.Fatal(err)
					}
					if ops[i].N != 65536 || !bytes.Equal(got, want) {
						t.Fatalf("block %d: read %d bytes, equal=%v", i, ops[i].N, bytes.Equal(got, want))
					}
				}
				if st := r.Stats(); fixed && st.FixedOps != 2*n {
					t.Fatalf("fixed ops %d, want %d", st.FixedOps, 2*n)
				} else if !fixed && st.FixedOps != 0 {
					t.Fatalf("fixed ops %d, want 0", st.FixedOps)
				}
			})
		}
	}
}

func TestRing_Do_Vectored(t *testing.T) {
	r := newRing(t, Config{NoDirect: true})
	f := openFile(t, 1<<20, true)
	parts := [][]byte{alignedBuf(4096, 1), alignedBuf(8192, 2), alignedBuf(4096, 3)}
	w := Op{Kind: OpWrite, Fd: int(f.Fd()), Bufs: parts, Off: 8192}
	if err := r.Do(&w); err != nil || w.N != 16384 {
		t.Fatalf("writev: n=%d err=%v", w.N, err)
	}
	got := [][]byte{alignedBuf(8192, 9), alignedBuf(8192, 9)}
	rd := Op{Kind: OpRead, Fd: int(f.Fd()), Bufs: got, Off: 8192}
	if err := r.Do(&rd); err != nil || rd.N != 16384 {
		t.Fatalf("readv: n=%d err=%v", rd.N, err)
	}
	if !bytes.Equal(bytes.Join(got, nil), bytes.Join(parts, nil)) {
		t.Fatal("readv data differs from writev data")
	}
}

func TestRing_Do_LinkedWriteFsync(t *testing.T) {
	r := newRing(t, Config{})
	f := openFile(t, 1<<20, true)
	buf := alignedBuf(4096, 7)
	ops := []*Op{
		{Kind: OpWrite, Fd: int(f.Fd()), Buf: buf, Off: 0, Flags: FlagLink},
		{Kind: OpFsync, Fd: int(f.Fd()), Flags: FlagDatasync},
	}
	if err := r.Do(ops...); err != nil {
		t.Fatal(err)
	}
	if ops[0].N != 4096 || ops[1].Err != nil {
		t.Fatalf("write n=%d, fsync err=%v", ops[0].N, ops[1].Err)
	}
}

func TestRing_Do_FailedLinkCancelsRest(t *testing.T) {
	r := newRing(t, Config{})
	// A write to a read-only fd fails with EBADF at the head of the chain.
	f := openFile(t, 1<<20, false)
	ro, err := os.Open(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	ops := []*Op{
		{Kind: OpWrite, Fd: int(ro.Fd()), Buf: alignedBuf(4096, 1), Flags: FlagLink},
		{Kind: OpFsync, Fd: int(f.Fd()), Flags: FlagLink},
		{Kind: OpWrite, Fd: int(f.Fd()), Buf: alignedBuf(4096, 2), Off: 4096},
		{Kind: OpNop}, // not linked: unaffected
	}
	err = r.Do(ops...)
	if !errors.Is(err, unix.EBADF) || !errors.Is(ops[0].Err, unix.EBADF) {
		t.Fatalf("Do = %v, head = %v; want EBADF", err, ops[0].Err)
	}
	for i := 1; i <= 2; i++ {
		if !errors.Is(ops[i].Err, ErrCanceled) {
			t.Fatalf("op %d: %v, want ErrCanceled", i, ops[i].Err)
		}
	}
	if ops[3].Err != nil {
		t.Fatalf("unlinked nop: %v", ops[3].Err)
	}
	// A misaligned O_DIRECT write fails with EINVAL and cancels its chain.
	d := openFile(t, 1<<20, true)
	ops = []*Op{
		{Kind: OpWrite, Fd: int(d.Fd()), Buf: alignedBuf(8192, 1)[1:4097], Flags: FlagLink},
		{Kind: OpFsync, Fd: int(d.Fd())},
	}
	if err := r.Do(ops...); !errors.Is(err, unix.EINVAL) || !errors.Is(ops[1].Err, ErrCanceled) {
		t.Fatalf("misaligned: %v / %v; want EINVAL then ErrCanceled", ops[0].Err, ops[1].Err)
	}
}

func TestRing_Do_ShortReadCompleted(t *testing.T) {
	r := newRing(t, Config{NoDirect: true})
	f := openFile(t, 3*4096+100, false)
	want := alignedBuf(3*4096+100, 5)
	if _, err := f.WriteAt(want, 0); err != nil {
		t.Fatal(err)
	}
	// An 8 KiB read at 8192 gets 4196 bytes, then 0: EOF with N = 4196.
	// Linked to a nop: the first short transfer cancels it and the ring
	// resumes the chain; the read then ends at EOF, still short, so the
	// kernel cancels the nop for good — the link's real semantics.
	got := alignedBuf(8192, 0)
	ops := []*Op{{Kind: OpRead, Fd: int(f.Fd()), Buf: got, Off: 8192, Flags: FlagLink}, {Kind: OpNop}}
	err := r.Do(ops...)
	if !errors.Is(err, io.EOF) || ops[0].N != 4096+100 {
		t.Fatalf("read n=%d err=%v; want %d and EOF", ops[0].N, err, 4096+100)
	}
	if !bytes.Equal(got[:ops[0].N], want[8192:]) {
		t.Fatal("short read data differs")
	}
	if !errors.Is(ops[1].Err, ErrCanceled) {
		t.Fatalf("nop after a read that ended short: %v, want ErrCanceled", ops[1].Err)
	}
	if st := r.Stats(); st.ShortIOs == 0 || st.Resubmits == 0 {
		t.Fatalf("stats %+v: want a short I/O and a resubmit", st)
	}
}

func TestRing_Do_CQOverflowLosesNothing(t *testing.T) {
	// An 8-entry SQ and CQ with 512 ops admitted: one turn submits them in
	// SQ-sized pieces before reaping, so the CQ overflows into the kernel's
	// list (NODROP) and the reactor must flush it.
	r := newRing(t, Config{Entries: 8, CQEntries: 8, InflightMax: 512, NoDirect: true, SubmitBatchMax: -1})
	ops := make([]*Op, 512)
	for round := 0; round < 20; round++ {
		for i := range ops {
			ops[i] = &Op{Kind: OpNop}
		}
		if err := r.Do(ops...); err != nil {
			t.Fatal(err)
		}
	}
	st := r.Stats()
	if st.Completed != 20*512 {
		t.Fatalf("completed %d, want %d", st.Completed, 20*512)
	}
	if st.OverflowFlushes == 0 {
		t.Fatalf("no CQ overflow provoked: %+v", st)
	}
	t.Logf("%+v", st)
}

func TestRing_Submit_Async(t *testing.T) {
	r := newRing(t, Config{})
	f := openFile(t, 1<<20, true)
	done := make(chan *Op, 32)
	ops := make([]*Op, 32)
	for i := range ops {
		ops[i] = &Op{Kind: OpWrite, Fd: int(f.Fd()), Buf: alignedBuf(4096, uint64(i)), Off: int64(i) * 4096}
	}
	if err := r.Submit(done, ops...); err != nil {
		t.Fatal(err)
	}
	seen := map[*Op]bool{}
	for range ops {
		op := <-done
		if op.Err != nil || op.N != 4096 {
			t.Fatalf("op: n=%d err=%v", op.N, op.Err)
		}
		seen[op] = true
	}
	if len(seen) != len(ops) {
		t.Fatalf("%d distinct completions, want %d", len(seen), len(ops))
	}
}

func TestRing_Submit_Invalid(t *testing.T) {
	r := newRing(t, Config{Entries: 8, InflightMax: 4})
	cases := map[string][]*Op{
		"zero-length read": {{Kind: OpRead, Fd: 0}},
		"negative offset":  {{Kind: OpWrite, Fd: 0, Buf: []byte{1}, Off: -1}},
		"bad kind":         {{Kind: 99}},
		"bad fd":           {{Kind: OpFsync, Fd: -1}},
		"trailing link":    {{Kind: OpNop, Flags: FlagLink}},
		"buf and bufs":     {{Kind: OpRead, Buf: []byte{1}, Bufs: [][]byte{{1}}}},
	}
	for name, ops := range cases {
		if err := r.Do(ops...); !errors.Is(err, ErrInvalidOp) {
			t.Errorf("%s: %v, want ErrInvalidOp", name, err)
		}
	}
	big := []*Op{{Kind: OpNop}, {Kind: OpNop}, {Kind: OpNop}, {Kind: OpNop}, {Kind: OpNop}}
	if err := r.Do(big...); !errors.Is(err, ErrBatchTooLarge) {
		t.Errorf("5 ops on a ring of 4: %v, want ErrBatchTooLarge", err)
	}
}

func TestRing_Do_Concurrent64(t *testing.T) {
	r := newRing(t, Config{Entries: 64, FixedBytes: 64 * 8192})
	f := openFile(t, 64*65536, true)
	fd := int(f.Fd())
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			base := int64(g) * 65536
			fixed := r.FixedRegion()[g*8192 : g*8192+8192]
			for it := range 40 {
				w := alignedBuf(8192, uint64(g*1000+it))
				var err error
				switch it % 4 {
				case 0: // lone synchronous calls (direct path when idle)
					if _, err = r.WriteAt(fd, w, base); err == nil {
						err = r.Fsync(fd, true)
					}
				case 1: // a batch with a linked flush
					err = r.Do(&Op{Kind: OpWrite, Fd: fd, Buf: w[:4096], Off: base},
						&Op{Kind: OpWrite, Fd: fd, Buf: w[4096:], Off: base + 4096, Flags: FlagLink},
						&Op{Kind: OpFsync, Fd: fd, Flags: FlagDatasync})
				case 2: // fixed buffer
					copy(fixed, w)
					err = r.Do(&Op{Kind: OpWrite, Fd: fd, Buf: fixed, Off: base})
				case 3: // vectored
					err = r.Do(&Op{Kind: OpWrite, Fd: fd, Bufs: [][]byte{w[:4096], w[4096:]}, Off: base})
				}
				if err != nil {
					errs <- err
					return
				}
				got := alignedBuf(8192, 0)
				if _, err := r.ReadAt(fd, got, base); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got, w) {
					errs <- errors.New("read back differs")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%+v", r.Stats())
}

func TestRing_Close_WhileInFlight(t *testing.T) {
	r, err := New(Config{Entries: 16, NoDirect: true})
	if err != nil {
		t.Fatal(err)
	}
	f := openFile(t, 1<<20, true)
	var wg sync.WaitGroup
	var completed, refused sync.Map
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := alignedBuf(4096, uint64(g))
			for i := 0; ; i++ {
				op := Op{Kind: OpWrite, Fd: int(f.Fd()), Buf: buf, Off: int64(g) * 4096}
				err := r.Do(&op, &Op{Kind: OpFsync, Fd: int(f.Fd())})
				if errors.Is(err, ErrClosed) {
					refused.Store(g, i)
					return
				}
				if err != nil || op.N != 4096 {
					t.Errorf("op during close: n=%d err=%v", op.N, err)
					return
				}
				completed.Store(g, i)
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for g := range 16 {
		if _, ok := refused.Load(g); !ok {
			t.Fatalf("goroutine %d never saw ErrClosed", g)
		}
	}
	if err := r.Do(&Op{Kind: OpNop}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Do after Close: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestRing_Direct_WhenIdle(t *testing.T) {
	r := newRing(t, Config{})
	f := openFile(t, 1<<20, true)
	buf := alignedBuf(4096, 3)
	if _, err := r.WriteAt(int(f.Fd()), buf, 0); err != nil {
		t.Fatal(err)
	}
	if err := r.Fsync(int(f.Fd()), true); err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.Direct != 2 || st.Completed != 0 {
		t.Fatalf("idle ring: %+v, want 2 direct ops", st)
	}
	r2 := newRing(t, Config{NoDirect: true})
	if _, err := r2.WriteAt(int(f.Fd()), buf, 0); err != nil {
		t.Fatal(err)
	}
	if st := r2.Stats(); st.Direct != 0 || st.Completed != 1 {
		t.Fatalf("NoDirect: %+v, want 1 ring op", st)
	}
}

func TestRing_Do_NoAllocs(t *testing.T) {
	r := newRing(t, Config{NoDirect: true})
	f := openFile(t, 1<<20, true)
	buf := alignedBuf(4096, 1)
	op := &Op{Kind: OpWrite, Fd: int(f.Fd()), Buf: buf}
	ops := []*Op{op}
	allocs := testing.AllocsPerRun(200, func() {
		if err := r.Do(ops...); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0 {
		t.Fatalf("%v allocations per Do, want 0", allocs)
	}
}

func TestRing_SubmitFunc_ResubmitsWithoutHandoff(t *testing.T) {
	r := newRing(t, Config{FixedBytes: 8 * 4096})
	f := openFile(t, 1<<20, true)
	const perOp = 50
	var (
		count    int // touched only by the reactor (in then) until finished closes
		finished = make(chan struct{})
		left     = 8
	)
	ops := make([]*Op, 8)
	runs := make(map[*Op]int)
	for i := range ops {
		ops[i] = &Op{Kind: OpWrite, Fd: int(f.Fd()), Buf: r.FixedRegion()[i*4096 : (i+1)*4096], Off: int64(i) * 4096}
	}
	then := func(op *Op) bool {
		if op.Err != nil || op.N != 4096 {
			t.Errorf("op: n=%d err=%v", op.N, op.Err)
		}
		count++
		runs[op]++
		if runs[op] < perOp {
			op.Off = (op.Off + 8*4096) % (1 << 20)
			return true
		}
		if left--; left == 0 {
			close(finished)
		}
		return false
	}
	if err := r.SubmitFunc(then, ops...); err != nil {
		t.Fatal(err)
	}
	<-finished
	if count != 8*perOp {
		t.Fatalf("%d completions, want %d", count, 8*perOp)
	}
	// The first SubmitFunc may wake the reactor; the 392 resubmissions
	// from the callback wake nobody.
	if st := r.Stats(); st.KernelWakes+st.Parks > 2 {
		t.Fatalf("%d eventfd wakes and %d parks: resubmission from the callback needs none", st.KernelWakes, st.Parks)
	}
	if err := r.SubmitFunc(then, &Op{Kind: OpNop, Flags: FlagLink}, &Op{Kind: OpNop}); !errors.Is(err, ErrInvalidOp) {
		t.Fatalf("chain to SubmitFunc: %v, want ErrInvalidOp", err)
	}
}

func TestRing_Do_SubmitBatchMax(t *testing.T) {
	for _, c := range []struct{ max, wantEntersMin int }{{1, 64}, {2, 32}, {-1, 1}} {
		r := newRing(t, Config{SubmitBatchMax: c.max, NoDirect: true})
		ops := make([]*Op, 64)
		for i := range ops {
			ops[i] = &Op{Kind: OpNop}
		}
		// A chain longer than the limit still goes whole.
		chain := []*Op{{Kind: OpNop, Flags: FlagLink}, {Kind: OpNop, Flags: FlagLink}, {Kind: OpNop}}
		if err := r.Do(append(ops, chain...)...); err != nil {
			t.Fatal(err)
		}
		st := r.Stats()
		if int(st.Enters) < c.wantEntersMin {
			t.Fatalf("SubmitBatchMax %d: %d enters for 67 ops, want at least %d", c.max, st.Enters, c.wantEntersMin)
		}
		t.Logf("SubmitBatchMax %d: %d enters", c.max, st.Enters)
	}
}
