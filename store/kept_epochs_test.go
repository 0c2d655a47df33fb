package store

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"testing"
)

// evictInodes evicts every inode the table may evict (unreferenced, clean,
// its mu free), as the cache's hand would under memory pressure, and
// returns how many it evicted.
func evictInodes(s *Store) int {
	t := s.itab
	n := 0
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		for _, in := range sh.m {
			if in.refs > 0 || in.buffered.Load() || !in.mu.TryLock() {
				continue
			}
			t.dropLocked(sh, in)
			in.mu.Unlock()
			t.c.Remove(uint64(in.ino))
			n++
		}
		sh.mu.Unlock()
	}
	return n
}

// TestKeptEpochs_Keep_OldestDropped: the bound holds, the oldest epoch
// goes first, and an epoch taken and kept again is not dropped by its old
// slot.
func TestKeptEpochs_Keep_OldestDropped(t *testing.T) {
	k := newKeptEpochs(3)
	k.keep(1, 10)
	k.keep(2, 20)
	if e := k.take(1); e != 10 {
		t.Fatalf("take(1) = %d", e)
	}
	if e := k.take(1); e != 0 {
		t.Fatalf("take(1) again = %d, want 0 (taken)", e)
	}
	k.keep(3, 30)
	k.keep(1, 11) // the ring is full: slots 1:0 (gone), 2:1, 3:2
	if k.count() != 3 {
		t.Fatalf("count %d, want 3", k.count())
	}
	k.keep(4, 40) // overwrites slot 1, inode 2's
	k.keep(5, 50) // overwrites slot 2, inode 3's
	if k.count() != 3 {
		t.Fatalf("count %d, want 3 (the bound)", k.count())
	}
	for ino, want := range map[Ino]uint64{2: 0, 3: 0, 1: 11, 4: 40, 5: 50} {
		if e := k.take(ino); e != want {
			t.Errorf("take(%d) = %d, want %d", ino, e, want)
		}
	}
}

// TestPageCache_Read_AfterInodeEviction: a file's cached blocks outlive its
// inode's eviction from the inode table: read, evicted, read again, it
// reads nothing from the device — for blocks cached by writeback and for
// blocks cached by a read.
func TestPageCache_Read_AfterInodeEviction(t *testing.T) {
	cd := &countingDev{Device: newTestDevice(t, 64<<20)}
	s := openTest(t, cd, quiet(Options{}))
	data := patternData(3, 256<<10+100)
	ino := mustCreate(t, s, RootIno, "f", data)
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	readEvicted := func(what string) {
		t.Helper()
		evictInodes(s)
		if s.itab.peek(ino) != nil {
			t.Fatalf("%s: the inode was not evicted", what)
		}
		buf := make([]byte, len(data))
		before, misses := cd.reads.Load(), s.CacheStats().PageMisses
		if n, err := s.Read(ino, 0, buf); err != nil || n != len(data) || !bytes.Equal(buf, data) {
			t.Fatalf("%s: n %d err %v equal %v", what, n, err, bytes.Equal(buf, data))
		}
		if got := cd.reads.Load() - before; got != 0 {
			t.Fatalf("%s: %d device reads after the inode's eviction, want 0", what, got)
		}
		if got := s.CacheStats().PageMisses - misses; got != 0 {
			t.Fatalf("%s: %d page misses, want 0", what, got)
		}
	}
	readEvicted("cached by writeback")
	readEvicted("evicted twice")
	if cs := s.CacheStats(); cs.EpochsResumed != 2 || cs.EpochsKept != 0 {
		t.Fatalf("%+v: want 2 epochs resumed, none kept now", cs)
	}

	s = remount(t, s, cd, quiet(Options{}))
	buf := make([]byte, len(data))
	before := cd.reads.Load()
	if _, err := s.Read(ino, 0, buf); err != nil || !bytes.Equal(buf, data) {
		t.Fatalf("read after remount: %v", err)
	}
	if cd.reads.Load() == before {
		t.Fatal("the first read after remount did not read the device")
	}
	readEvicted("cached by a read")
	checkBudget(t, s)
	closeCheck(t, s)
}

// TestPageCache_NeverStale_AcrossEviction: every change made to a file
// after its inode was evicted and loaded again — an overwrite, a partial
// write over a cached block, a truncate, an unlink, a rename over it —
// reads back as changed, with the inode evicted again before each read.
func TestPageCache_NeverStale_AcrossEviction(t *testing.T) {
	d := newTestDevice(t, 64<<20)
	s := openTest(t, d, quiet(Options{}))
	ctx := context.Background()
	const blocks = 8
	want := make([]byte, blocks*blockSize)
	for b := range uint64(blocks) {
		copy(want[b*blockSize:], blockVersion(b, 1))
	}
	ino := mustCreate(t, s, RootIno, "f", want)
	check := func(what string, ino Ino, want []byte) {
		t.Helper()
		evictInodes(s)
		buf := make([]byte, blocks*blockSize+1)
		n, err := s.Read(ino, 0, buf)
		if err != nil || !bytes.Equal(buf[:n], want) {
			t.Fatalf("%s: n %d (want %d) err %v: stale or wrong bytes", what, n, len(want), err)
		}
	}
	sync := func() {
		t.Helper()
		if err := s.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sync()
	check("written back", ino, want)

	// A whole-block overwrite of a cached block after a reload: its dirty
	// page shadows the cache, then writeback replaces the cached block.
	evictInodes(s)
	copy(want[3*blockSize:], blockVersion(3, 2))
	if _, err := s.Write(ino, 3*blockSize, blockVersion(3, 2)); err != nil {
		t.Fatal(err)
	}
	check("overwritten, dirty", ino, want)
	sync()
	check("overwritten, written back", ino, want)

	// A partial write after a reload: the rest of the block comes from
	// the cache, the cached copy goes.
	evictInodes(s)
	copy(want[5*blockSize+10:], "partial")
	if _, err := s.Write(ino, 5*blockSize+10, []byte("partial")); err != nil {
		t.Fatal(err)
	}
	sync()
	check("partial write", ino, want)

	// A truncate after a reload drops the cached blocks (a new epoch);
	// growing again reads zeros past the cut.
	evictInodes(s)
	if err := s.Truncate(ino, 2*blockSize+7); err != nil {
		t.Fatal(err)
	}
	evictInodes(s)
	if err := s.Truncate(ino, blocks*blockSize); err != nil {
		t.Fatal(err)
	}
	clear(want[2*blockSize+7:])
	check("truncated and grown", ino, want)
	sync()
	check("truncated, committed", ino, want)

	// A rename over the file after a reload: the name reads the new
	// file, the old inode is gone.
	other := make([]byte, 3*blockSize)
	for b := range uint64(3) {
		copy(other[b*blockSize:], blockVersion(b, 9))
	}
	g := mustCreate(t, s, RootIno, "g", other)
	sync()
	check("the other file", g, other)
	evictInodes(s)
	if err := s.Rename(RootIno, "g", RootIno, "f"); err != nil {
		t.Fatal(err)
	}
	evictInodes(s)
	a, err := s.Lookup(RootIno, "f")
	if err != nil || a.Ino != g {
		t.Fatalf("lookup f after the rename: %+v %v, want inode %d", a, err, g)
	}
	check("renamed over", g, other)
	if _, err := s.Read(ino, 0, make([]byte, 10)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("read of the file renamed over: %v, want ENOENT", err)
	}

	// An unlink after a reload.
	evictInodes(s)
	if err := s.Unlink(RootIno, "f"); err != nil {
		t.Fatal(err)
	}
	evictInodes(s)
	if _, err := s.Read(g, 0, make([]byte, 10)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("read of the unlinked file: %v, want ENOENT", err)
	}
	if cs := s.CacheStats(); cs.EpochsResumed == 0 {
		t.Fatalf("%+v: no inode continued its epoch; the test tests nothing", cs)
	}
	closeCheck(t, s)
}
