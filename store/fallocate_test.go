package store

import (
	"bytes"
	"context"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"

	"ustore/dev/memdev"
)

// fallocFix is a store with one file of n pattern bytes, written back.
func fallocFix(t *testing.T, devSize int64, n int) (*Store, *memdev.Device, Ino, []byte) {
	t.Helper()
	d := newTestDevice(t, devSize)
	s := openTest(t, d, Options{})
	a, err := s.Create(RootIno, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	want := posixPattern(n, 5)
	if n > 0 {
		posixWrite(t, s, a.Ino, 0, want)
	}
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, d, a.Ino, want
}

func mustStat(t *testing.T, s *Store, ino Ino) Attr {
	t.Helper()
	a, err := s.Stat(ino)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func wantContent(t *testing.T, s *Store, ino Ino, want []byte, when string) {
	t.Helper()
	if got := posixReadAll(t, s, ino); !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes, want %d; first difference at %d", when, len(got), len(want), posixFirstDiff(got, want))
	}
}

// Mode 0 past the end grows the file, allocates the new blocks (st_blocks,
// statfs's free blocks) and reads zeros there; the data before is kept,
// the old last block's tail included, through a remount.
func TestStore_Fallocate_Grow(t *testing.T) {
	s, d, ino, want := fallocFix(t, 32<<20, 5000)
	freeBefore := s.StatFS().BlocksFree
	a, err := s.Fallocate(ino, 0, 3000, 40000)
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, make([]byte, 43000-len(want))...)
	if a.Size != 43000 {
		t.Fatalf("size %d, want 43000", a.Size)
	}
	// 5000 bytes took 2 blocks; 43000 take 11.
	if a.Blocks != 11*blockSize {
		t.Fatalf("blocks %d bytes, want %d", a.Blocks, 11*blockSize)
	}
	wantContent(t, s, ino, want, "after fallocate")
	if err := syncCheck(s); err != nil {
		t.Fatal(err)
	}
	if used := freeBefore - s.StatFS().BlocksFree; used < 9 {
		t.Fatalf("statfs: %d blocks taken, want at least the 9 allocated", used)
	}
	closeCheck(t, s)
	s = openTest(t, d, Options{})
	if a := mustStat(t, s, ino); a.Size != 43000 || a.Blocks != 11*blockSize {
		t.Fatalf("after a remount: %+v", a)
	}
	wantContent(t, s, ino, want, "after a remount")
	closeCheck(t, s)
}

// Mode 0 over data and holes allocates only the holes: the data is kept,
// holes become zero blocks; a range inside the file changes no size.
func TestStore_Fallocate_FillsHoles(t *testing.T) {
	s, _, ino, _ := fallocFix(t, 32<<20, 0)
	want := make([]byte, 10*blockSize)
	copy(want[2*blockSize:], posixPattern(blockSize, 1))
	copy(want[7*blockSize:], posixPattern(blockSize, 2))
	posixWrite(t, s, ino, 2*blockSize, want[2*blockSize:3*blockSize])
	posixWrite(t, s, ino, 7*blockSize, want[7*blockSize:])
	if a := mustStat(t, s, ino); a.Blocks != 0 {
		t.Fatalf("buffered: %d bytes allocated", a.Blocks)
	}
	a, err := s.Fallocate(ino, 0, 100, 9*blockSize)
	if err != nil {
		t.Fatal(err)
	}
	if a.Size != 10*blockSize || a.Blocks != 10*blockSize {
		t.Fatalf("size %d blocks %d, want both %d", a.Size, a.Blocks, 10*blockSize)
	}
	wantContent(t, s, ino, want, "after fallocate")
	closeCheck(t, s)
}

// KEEP_SIZE allocates the holes inside the file and leaves the size; the
// part of the range past the end allocates nothing (no preallocated
// extents in this format).
func TestStore_Fallocate_KeepSize(t *testing.T) {
	s, _, ino, _ := fallocFix(t, 32<<20, 0)
	if err := s.Truncate(ino, 6*blockSize+10); err != nil {
		t.Fatal(err)
	}
	a, err := s.Fallocate(ino, FallocKeepSize, 0, 100*blockSize)
	if err != nil {
		t.Fatal(err)
	}
	if a.Size != 6*blockSize+10 || a.Blocks != 7*blockSize {
		t.Fatalf("size %d blocks %d, want %d and %d", a.Size, a.Blocks, 6*blockSize+10, 7*blockSize)
	}
	wantContent(t, s, ino, make([]byte, 6*blockSize+10), "after fallocate")
	if err := s.Truncate(ino, 9*blockSize); err != nil {
		t.Fatal(err)
	}
	wantContent(t, s, ino, make([]byte, 9*blockSize), "grown by truncate")
	closeCheck(t, s)
}

// PUNCH_HOLE|KEEP_SIZE frees whole blocks (an extent split in the middle,
// its space back in statfs after a commit), zeroes the partial blocks at
// the edges, drops the buffered and cached pages of the range, and keeps
// the size; the rest reads as before, through a remount.
func TestStore_Fallocate_PunchHole(t *testing.T) {
	const n = 20 * blockSize
	s, d, ino, want := fallocFix(t, 32<<20, n)
	// Cached blocks and a dirty one in the range must not come back.
	posixReadAll(t, s, ino)
	dirty := posixPattern(blockSize, 9)
	posixWrite(t, s, ino, 8*blockSize, dirty)
	copy(want[8*blockSize:], dirty)
	freeBefore := s.StatFS().BlocksFree
	off, length := int64(3*blockSize+100), int64(10*blockSize)
	a, err := s.Fallocate(ino, FallocPunchHole|FallocKeepSize, off, length)
	if err != nil {
		t.Fatal(err)
	}
	clear(want[off : off+length])
	if a.Size != n {
		t.Fatalf("size %d, want %d", a.Size, n)
	}
	// Blocks 4–12 are whole in the range: 9 go.
	if a.Blocks != 11*blockSize {
		t.Fatalf("blocks %d, want %d", a.Blocks, 11*blockSize)
	}
	wantContent(t, s, ino, want, "after the punch")
	if err := syncCheck(s); err != nil {
		t.Fatal(err)
	}
	if err := syncCheck(s); err != nil { // the second commit unpins
		t.Fatal(err)
	}
	if back := int64(s.StatFS().BlocksFree) - int64(freeBefore); back < 8 {
		t.Fatalf("statfs: %d blocks came back, want about 9", back)
	}
	wantContent(t, s, ino, want, "after a commit")
	closeCheck(t, s)
	s = openTest(t, d, Options{})
	wantContent(t, s, ino, want, "after a remount")
	if a := mustStat(t, s, ino); a.Blocks != 11*blockSize {
		t.Fatalf("after a remount: blocks %d", a.Blocks)
	}
	closeCheck(t, s)
}

// Punch edges: inside one block (zeroed, nothing freed), to the end of an
// unaligned file (the last block goes whole), past the end (clamped), at or
// past the end (nothing), an inline file's only block.
func TestStore_Fallocate_PunchEdges(t *testing.T) {
	const n = 5*blockSize + 123
	s, _, ino, want := fallocFix(t, 32<<20, n)
	punch := func(off, length int64) Attr {
		t.Helper()
		a, err := s.Fallocate(ino, FallocPunchHole|FallocKeepSize, off, length)
		if err != nil {
			t.Fatalf("punch %d+%d: %v", off, length, err)
		}
		clear(want[min(off, n):min(off+length, n)])
		if a.Size != n {
			t.Fatalf("punch %d+%d: size %d", off, length, a.Size)
		}
		wantContent(t, s, ino, want, "after a punch")
		return a
	}
	if a := punch(10, 100); a.Blocks != 6*blockSize {
		t.Fatalf("inside a block: %d bytes allocated", a.Blocks)
	}
	if a := punch(4*blockSize, 1<<30); a.Blocks != 4*blockSize {
		t.Fatalf("to past the end: %d bytes allocated", a.Blocks)
	}
	punch(n, 10)
	punch(n+blockSize, 10)
	if err := syncCheck(s); err != nil {
		t.Fatal(err)
	}
	small, _ := s.Create(RootIno, "small", 0o644)
	posixWrite(t, s, small.Ino, 0, []byte("inline data"))
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fallocate(small.Ino, FallocPunchHole|FallocKeepSize, 2, 3); err != nil {
		t.Fatal(err)
	}
	wantContent(t, s, small.Ino, []byte("in\x00\x00\x00e data"), "inline, partly punched")
	if a, err := s.Fallocate(small.Ino, FallocPunchHole|FallocKeepSize, 0, 11); err != nil || a.Blocks != 0 {
		t.Fatalf("inline, punched whole: %+v %v", a, err)
	}
	wantContent(t, s, small.Ino, make([]byte, 11), "inline, punched whole")
	closeCheck(t, s)
}

// The errors, each before any change: EINVAL for a bad range, EOPNOTSUPP
// for the modes not supported (PUNCH_HOLE alone, ZERO_RANGE, COLLAPSE,
// INSERT, UNSHARE, unknown bits), EISDIR, EFBIG past the largest file,
// ENOENT for a deleted inode.
func TestStore_Fallocate_Errors(t *testing.T) {
	fx := newPosixFix(t)
	s := fx.s
	before := posixTree(t, s)
	for _, c := range []struct {
		ino         Ino
		mode        uint32
		off, length int64
		want        syscall.Errno
		what        string
	}{
		{fx.f, 0, 0, 0, syscall.EINVAL, "zero length"},
		{fx.f, 0, 0, -1, syscall.EINVAL, "negative length"},
		{fx.f, 0, -1, 10, syscall.EINVAL, "negative offset"},
		{fx.f, FallocPunchHole, 0, 10, syscall.EOPNOTSUPP, "PUNCH_HOLE without KEEP_SIZE"},
		{fx.f, 0x08, 0, 10, syscall.EOPNOTSUPP, "COLLAPSE_RANGE"},
		{fx.f, 0x10, 0, 10, syscall.EOPNOTSUPP, "ZERO_RANGE"},
		{fx.f, 0x20, 0, 10, syscall.EOPNOTSUPP, "INSERT_RANGE"},
		{fx.f, 0x40, 0, 10, syscall.EOPNOTSUPP, "UNSHARE_RANGE"},
		{fx.f, 1 << 20, 0, 10, syscall.EOPNOTSUPP, "an unknown bit"},
		{fx.d, 0, 0, 10, syscall.EISDIR, "a directory"},
		{fx.f, 0, MaxFileSize - 10, 11, syscall.EFBIG, "past the largest file"},
		{fx.f, FallocKeepSize, MaxFileSize, 1, syscall.EFBIG, "KEEP_SIZE past the largest file"},
		{fx.delFile, 0, 0, 10, syscall.ENOENT, "a deleted file"},
	} {
		_, err := s.Fallocate(c.ino, c.mode, c.off, c.length)
		posixWantErr(t, c.what, err, c.want)
		if d := posixDiff(before, posixTree(t, s)); d != "" {
			t.Fatalf("%s changed the tree:\n%s", c.what, d)
		}
	}
	closeCheck(t, s)
}

// A mode 0 allocation the device cannot hold fails with ENOSPC before any
// change: size, blocks and statfs as they were; one that fits still
// succeeds afterwards. On the full device a punch of whole blocks works,
// and its space comes back.
func TestStore_Fallocate_ENOSPC(t *testing.T) {
	s, _, ino, want := fallocFix(t, 16<<20, 8*blockSize)
	before := mustStat(t, s, ino)
	freeBefore := s.StatFS().BlocksFree
	_, err := s.Fallocate(ino, 0, 0, 64<<20)
	wantENOSPC(t, "fallocate past the device", err)
	if a := mustStat(t, s, ino); a.Size != before.Size || a.Blocks != before.Blocks {
		t.Fatalf("after ENOSPC: %+v, was %+v", a, before)
	}
	if f := s.StatFS().BlocksFree; f != freeBefore {
		t.Fatalf("after ENOSPC: %d blocks free, was %d", f, freeBefore)
	}
	wantContent(t, s, ino, want, "after ENOSPC")
	// Fill the device with allocations until one fails.
	other, _ := s.Create(RootIno, "fill", 0o644)
	var at int64
	for step := int64(1 << 20); step >= blockSize; {
		if _, err := s.Fallocate(other.Ino, 0, at, step); err != nil {
			wantENOSPC(t, "filling", err)
			step /= 2
			continue
		}
		at += step
	}
	if at < 8<<20 {
		t.Fatalf("only %d bytes allocated on a 16 MiB device", at)
	}
	if _, err := s.Write(ino, 100*blockSize, make([]byte, 64*blockSize)); err == nil {
		t.Fatal("a 256 KiB write fits on the full device")
	}
	a, err := s.Fallocate(other.Ino, FallocPunchHole|FallocKeepSize, blockSize, at-2*blockSize)
	if err != nil {
		t.Fatalf("punch on the full device: %v", err)
	}
	if a.Blocks != 2*blockSize {
		t.Fatalf("after the punch: %d bytes allocated", a.Blocks)
	}
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fallocate(ino, 0, 0, 2<<20); err != nil {
		t.Fatalf("allocation after the punch freed space: %v", err)
	}
	closeCheck(t, s)
}

// Fallocate then fsync: the allocation and the grown size survive a crash
// (the log or a commit holds them), fsck clean.
func TestStore_Fallocate_Fsync(t *testing.T) {
	s, d, ino, want := fallocFix(t, 32<<20, 3*blockSize+7)
	if _, err := s.Fallocate(ino, 0, 0, 12*blockSize+1); err != nil {
		t.Fatal(err)
	}
	if err := s.Fsync(context.Background(), ino, false); err != nil {
		t.Fatal(err)
	}
	want = append(want, make([]byte, 12*blockSize+1-len(want))...)
	if _, err := s.Fallocate(ino, FallocPunchHole|FallocKeepSize, 1, 2*blockSize); err != nil {
		t.Fatal(err)
	}
	clear(want[1 : 1+2*blockSize])
	if err := s.Fsync(context.Background(), ino, false); err != nil {
		t.Fatal(err)
	}
	crashed := d.Crash(memdev.KeepNone())
	s = openTest(t, crashed, Options{})
	wantContent(t, s, ino, want, "after the crash")
	// 13 blocks allocated, block 1 punched (blocks 0 and 2 are edges).
	if a := mustStat(t, s, ino); a.Blocks != 12*blockSize {
		t.Fatalf("after the crash: %d bytes allocated, want %d", a.Blocks, 12*blockSize)
	}
	closeCheck(t, s)
}

// A punch that drops a file's last buffered pages, never written back:
// the tree's size must still reach the file's (no writeback is left to
// move it), so the size survives a remount — a model-test find.
func TestStore_Fallocate_PunchBufferedOnly(t *testing.T) {
	s, d, ino, _ := fallocFix(t, 32<<20, 0)
	posixWrite(t, s, ino, 0, posixPattern(3960, 4))
	if _, err := s.Fallocate(ino, FallocPunchHole|FallocKeepSize, 0, 8192); err != nil {
		t.Fatal(err)
	}
	wantContent(t, s, ino, make([]byte, 3960), "after the punch")
	closeCheck(t, s)
	s = openTest(t, d, Options{})
	wantContent(t, s, ino, make([]byte, 3960), "after a remount")
	closeCheck(t, s)
}

// Allocations and punches race with writes, reads, truncates and fsyncs
// of the same file (run under -race): nothing deadlocks, every call
// succeeds, and the store is fsck clean at the end. A last sequential
// pass checks that the file reads back as a model says.
func TestStore_Fallocate_Concurrent(t *testing.T) {
	s, _, ino, _ := fallocFix(t, 64<<20, 0)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			buf := make([]byte, 3*blockSize)
			for i := range 150 {
				off := int64(rng.IntN(64)) * 1000
				var err error
				switch (g + i) % 6 {
				case 0:
					_, err = s.Fallocate(ino, 0, off, int64(1+rng.IntN(5*blockSize)))
				case 1:
					_, err = s.Fallocate(ino, FallocPunchHole|FallocKeepSize, off, int64(1+rng.IntN(5*blockSize)))
				case 2:
					_, err = s.Write(ino, uint64(off), posixPattern(1+rng.IntN(len(buf)), byte(i)))
				case 3:
					_, err = s.Read(ino, uint64(off), buf)
				case 4:
					err = s.Fsync(ctx, ino, i%2 == 0)
				case 5:
					_, err = s.Fallocate(ino, FallocKeepSize, 0, 1<<20)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Sequential: the model is exact.
	if err := s.Truncate(ino, 0); err != nil {
		t.Fatal(err)
	}
	var want []byte
	rng := rand.New(rand.NewPCG(5, 5))
	for i := range 200 {
		off, n := rng.IntN(40000), 1+rng.IntN(3*blockSize)
		switch i % 3 {
		case 0:
			data := posixPattern(n, byte(i))
			posixWrite(t, s, ino, uint64(off), data)
			want = append(want, make([]byte, max(0, off+n-len(want)))...)
			copy(want[off:], data)
		case 1:
			if _, err := s.Fallocate(ino, 0, int64(off), int64(n)); err != nil {
				t.Fatal(err)
			}
			want = append(want, make([]byte, max(0, off+n-len(want)))...)
		case 2:
			if _, err := s.Fallocate(ino, FallocPunchHole|FallocKeepSize, int64(off), int64(n)); err != nil {
				t.Fatal(err)
			}
			if off < len(want) {
				clear(want[off:min(off+n, len(want))])
			}
		}
		if i%50 == 49 {
			if err := syncCheck(s); err != nil {
				t.Fatal(err)
			}
		}
	}
	wantContent(t, s, ino, want, "after the sequential pass")
	closeCheck(t, s)
}
