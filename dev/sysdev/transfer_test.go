package sysdev

import (
	"bytes"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"ustore/dev"
)

// fakeFile is a pread/pwrite over memory that moves at most chunk bytes a
// call and first answers with the errnos of script, one per call.
type fakeFile struct {
	data   []byte
	chunk  int
	script []error
	calls  int
}

func (f *fakeFile) io(write bool) func(int, []byte, int64) (int, error) {
	return func(_ int, p []byte, off int64) (int, error) {
		f.calls++
		if len(f.script) > 0 {
			err := f.script[0]
			f.script = f.script[1:]
			if err != nil {
				return -1, err
			}
		}
		if off >= int64(len(f.data)) {
			return 0, nil
		}
		n := min(len(p), f.chunk, len(f.data)-int(off))
		if write {
			copy(f.data[off:], p[:n])
		} else {
			copy(p[:n], f.data[off:])
		}
		return n, nil
	}
}

// TestTransfer_ShortCounts: transfers of 1000 bytes a call (not even a
// sector) complete a 3-sector read and write.
func TestTransfer_ShortCounts(t *testing.T) {
	f := &fakeFile{data: make([]byte, 4*s), chunk: 1000}
	src := bytes.Repeat([]byte{7}, 3*s)
	if err := transfer("write", f.io(true), 0, src, s); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.data[s:], src) || f.calls != (3*s+999)/1000 {
		t.Errorf("write: data wrong or %d calls", f.calls)
	}
	dst := make([]byte, 3*s)
	if err := transfer("read", f.io(false), 0, dst, s); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dst, src) {
		t.Error("read back differs")
	}
}

// TestTransfer_RetriesEINTRAndEAGAIN: EINTR and EAGAIN are retried and the
// transfer completes.
func TestTransfer_RetriesEINTRAndEAGAIN(t *testing.T) {
	f := &fakeFile{data: make([]byte, s), chunk: s, script: []error{unix.EINTR, unix.EAGAIN, unix.EINTR, unix.EAGAIN}}
	if err := transfer("write", f.io(true), 0, bytes.Repeat([]byte{1}, s), 0); err != nil {
		t.Fatal(err)
	}
	if f.calls != 5 || f.data[s-1] != 1 {
		t.Errorf("%d calls, last byte %d; want 5 calls and the data", f.calls, f.data[s-1])
	}
}

// TestTransfer_EAGAINBounded: endless EAGAIN ends with the errno after
// eagainRetryMax retries.
func TestTransfer_EAGAINBounded(t *testing.T) {
	calls := 0
	sys := func(int, []byte, int64) (int, error) { calls++; return -1, unix.EAGAIN }
	start := time.Now()
	err := transfer("read", sys, 0, make([]byte, s), 0)
	if !errors.Is(err, unix.EAGAIN) || calls != eagainRetryMax+1 {
		t.Errorf("got %v after %d calls, want EAGAIN after %d", err, calls, eagainRetryMax+1)
	}
	t.Logf("gave up after %v", time.Since(start))
}

// TestTransfer_Errnos: EIO and ENOSPC come back matching the dev sentinels
// and the errno; EOF on a read is ErrTruncated and dev.ErrIO.
func TestTransfer_Errnos(t *testing.T) {
	for _, c := range []struct {
		errno    unix.Errno
		sentinel error
	}{{unix.EIO, dev.ErrIO}, {unix.ENOSPC, dev.ErrNoSpace}, {unix.EDQUOT, dev.ErrNoSpace}} {
		f := &fakeFile{data: make([]byte, s), chunk: s, script: []error{c.errno}}
		err := transfer("write", f.io(true), 0, make([]byte, s), 0)
		if !errors.Is(err, c.sentinel) || !errors.Is(err, c.errno) {
			t.Errorf("%v: got %v, want %v", c.errno, err, c.sentinel)
		}
	}
	f := &fakeFile{data: make([]byte, s), chunk: s}
	err := transfer("read", f.io(false), 0, make([]byte, 2*s), 0)
	if !errors.Is(err, ErrTruncated) || !errors.Is(err, dev.ErrIO) {
		t.Errorf("read past EOF: got %v, want ErrTruncated and dev.ErrIO", err)
	}
	zero := func(int, []byte, int64) (int, error) { return 0, nil }
	if err := transfer("write", zero, 0, make([]byte, s), 0); !errors.Is(err, dev.ErrIO) {
		t.Errorf("write moving nothing: got %v, want dev.ErrIO", err)
	}
}

func TestFlush_RetriesEINTRMapsEIO(t *testing.T) {
	calls := 0
	if err := flush(func(int) error {
		calls++
		if calls < 3 {
			return unix.EINTR
		}
		return nil
	}, 0); err != nil || calls != 3 {
		t.Errorf("got %v after %d calls, want nil after 3", err, calls)
	}
	if err := flush(func(int) error { return unix.EIO }, 0); !errors.Is(err, dev.ErrIO) {
		t.Errorf("got %v, want dev.ErrIO", err)
	}
}

// openFaulty opens a 1 MiB device in a temporary directory with sys.
func openFaulty(t *testing.T, sys *syscalls, workers int) *Device {
	t.Helper()
	d, err := Open(filepath.Join(t.TempDir(), "dev"), Options{Size: 1 << 20, Workers: workers, Logger: quietLogger(), sys: sys})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestDevice_Write_EIOPerIO: a pwrite failing with EIO at one offset fails
// that IO only (the IOs are not adjacent, so each is its own pwrite); the call returns its error; a failing fdatasync fails Flush
// and stops WriteDurable before its next stage.
func TestDevice_Write_EIOPerIO(t *testing.T) {
	var wrote sync.Map // offsets written
	sys := realSyscalls
	sys.pwrite = func(fd int, p []byte, off int64) (int, error) {
		if off == 4*s {
			return -1, unix.EIO
		}
		wrote.Store(off, true)
		return unix.Pwrite(fd, p, off)
	}
	sys.fdatasync = func(int) error { return unix.EIO }
	d := openFaulty(t, &sys, 4)

	ios := make([]dev.IO, 4)
	for i := range ios {
		ios[i] = dev.IO{Off: int64(2*i) * s, Buf: dev.AlignedBuffer(s)}
	}
	err := d.Write(ios)
	if !errors.Is(err, dev.ErrIO) || ios[2].Err != err {
		t.Errorf("Write: %v, io 2 Err %v; want that EIO", err, ios[2].Err)
	}
	for i, io := range ios {
		if (io.Err != nil) != (i == 2) {
			t.Errorf("io %d: Err = %v", i, io.Err)
		}
	}
	if err := d.Flush(); !errors.Is(err, dev.ErrIO) {
		t.Errorf("Flush: %v, want dev.ErrIO", err)
	}
	stage2 := []dev.IO{{Off: 8 * s, Buf: dev.AlignedBuffer(s)}}
	if err := d.WriteDurable([]dev.IO{{Off: 9 * s, Buf: dev.AlignedBuffer(s)}}, stage2); !errors.Is(err, dev.ErrIO) {
		t.Errorf("WriteDurable: %v, want dev.ErrIO", err)
	}
	if _, ok := wrote.Load(int64(8 * s)); ok {
		t.Error("WriteDurable wrote stage 2 after a failed flush")
	}
}

// TestDevice_Write_Runs: IOs adjacent on the device and in the batch go as
// one pwritev of at most writevIOsMax buffers, its short counts continued
// mid-buffer; a lone IO, or one listed out of order, is its own pwrite; a
// failed pwritev fails every IO of its run and no other.
func TestDevice_Write_Runs(t *testing.T) {
	var mu sync.Mutex
	var pwrites, pwritevs []int64 // offsets
	var iovs []int
	sys := realSyscalls
	sys.pwrite = func(fd int, p []byte, off int64) (int, error) {
		mu.Lock()
		pwrites = append(pwrites, off)
		mu.Unlock()
		return unix.Pwrite(fd, p, off)
	}
	sys.pwritev = func(fd int, bufs [][]byte, off int64) (int, error) {
		mu.Lock()
		pwritevs = append(pwritevs, off)
		iovs = append(iovs, len(bufs))
		mu.Unlock()
		if off == 200*s {
			return -1, unix.EIO
		}
		// Short: at most 1.5 sectors a call, so most calls stop mid-buffer.
		n, left := 0, s+s/2
		for _, b := range bufs {
			if left == 0 {
				break
			}
			k := min(len(b), left)
			m, err := unix.Pwrite(fd, b[:k], off+int64(n))
			if err != nil {
				return -1, err
			}
			n, left = n+m, left-m
		}
		return n, nil
	}
	d := openFaulty(t, &sys, 4)

	var ios []dev.IO
	add := func(sector int) {
		b := dev.AlignedBuffer(s)
		for i := range b {
			b[i] = byte(sector*7 + i/512)
		}
		ios = append(ios, dev.IO{Off: int64(sector) * s, Buf: b})
	}
	for i := range writevIOsMax + 3 { // sectors 0..66: a full run and one of 3
		add(i)
	}
	add(100) // alone
	add(111) // listed before 110: neither merges
	add(110)
	if err := d.Write(ios); err != nil {
		t.Fatal(err)
	}
	// Each pwritev call is one attempt; count distinct run starts instead.
	runs := map[int64]bool{}
	for _, off := range pwritevs {
		runs[off] = true
	}
	if !runs[0] || !runs[int64(writevIOsMax)*s] || slices.Max(iovs) > writevIOsMax {
		t.Errorf("pwritev offsets %v (iov counts %v): want runs at sectors 0 and %d", pwritevs, iovs, writevIOsMax)
	}
	slices.Sort(pwrites)
	if want := []int64{100 * s, 110 * s, 111 * s}; !slices.Equal(pwrites, want) {
		t.Errorf("pwrite offsets %v, want %v", pwrites, want)
	}
	for _, io := range ios {
		got := dev.AlignedBuffer(s)
		if err := d.Read([]dev.IO{{Off: io.Off, Buf: got}}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, io.Buf) {
			t.Fatalf("sector %d reads back wrong", io.Off/s)
		}
	}

	fail := []dev.IO{
		{Off: 198 * s, Buf: dev.AlignedBuffer(s)}, // alone: pwrite
		{Off: 200 * s, Buf: dev.AlignedBuffer(s)}, // a run of two: EIO
		{Off: 201 * s, Buf: dev.AlignedBuffer(s)},
	}
	err := d.Write(fail)
	if !errors.Is(err, dev.ErrIO) {
		t.Fatalf("Write: %v, want EIO", err)
	}
	if fail[0].Err != nil || !errors.Is(fail[1].Err, dev.ErrIO) || !errors.Is(fail[2].Err, dev.ErrIO) {
		t.Errorf("Errs %v, %v, %v: want nil, EIO, EIO", fail[0].Err, fail[1].Err, fail[2].Err)
	}
}

// TestTransferv_ShortAndRetried: transferv continues a pwritev that stops
// mid-buffer and at a buffer's end, and retries EINTR.
func TestTransferv_ShortAndRetried(t *testing.T) {
	f := &fakeFile{data: make([]byte, 4*s), chunk: 700, script: []error{unix.EINTR}}
	write := f.io(true)
	writev := func(fd int, bufs [][]byte, off int64) (int, error) {
		return write(fd, bufs[0], off) // the first buffer only: short
	}
	var bufs [][]byte
	var want []byte
	for i := range 3 {
		b := bytes.Repeat([]byte{byte(i + 1)}, s)
		bufs = append(bufs, b)
		want = append(want, b...)
	}
	if err := transferv(writev, 0, bufs, s); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.data[s:], want) {
		t.Error("data wrong")
	}
	if err := transferv(func(int, [][]byte, int64) (int, error) { return 0, nil }, 0, [][]byte{make([]byte, s)}, 0); !errors.Is(err, dev.ErrIO) {
		t.Errorf("a pwritev that moves nothing: %v, want EIO", err)
	}
}

// TestDevice_Read_ShortCounts: the device completes pread's short counts.
func TestDevice_Read_ShortCounts(t *testing.T) {
	sys := realSyscalls
	sys.pread = func(fd int, p []byte, off int64) (int, error) {
		return unix.Pread(fd, p[:min(len(p), 1536)], off)
	}
	d := openFaulty(t, &sys, 2)
	w := dev.AlignedBuffer(4 * s)
	for i := range w {
		w[i] = byte(i / 7)
	}
	if err := d.Write([]dev.IO{{Off: s, Buf: w}}); err != nil {
		t.Fatal(err)
	}
	r := dev.AlignedBuffer(4 * s)
	if err := d.Read([]dev.IO{{Off: s, Buf: r}}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r, w) {
		t.Error("read back differs")
	}
}

// TestDevice_Workers_BoundInFlight: with 4 workers, a batch of 64 reads from
// 8 goroutines never has more than 4 preads in flight, yet runs them in
// parallel (Invariant 2).
func TestDevice_Workers_BoundInFlight(t *testing.T) {
	const workers = 4
	var inFlight, peak atomic.Int32
	sys := realSyscalls
	sys.pread = func(fd int, p []byte, off int64) (int, error) {
		n := inFlight.Add(1)
		for {
			m := peak.Load()
			if n <= m || peak.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(200 * time.Microsecond)
		inFlight.Add(-1)
		return unix.Pread(fd, p, off)
	}
	d := openFaulty(t, &sys, workers)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ios := make([]dev.IO, 8)
			for i := range ios {
				ios[i] = dev.IO{Off: int64(g*8+i) * s, Buf: dev.AlignedBuffer(s)}
			}
			if err := d.Read(ios); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if p := peak.Load(); p > workers || p < 2 {
		t.Errorf("peak preads in flight = %d, want 2..%d", p, workers)
	}
}
