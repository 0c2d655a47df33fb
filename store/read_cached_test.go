package store

import (
	"bytes"
	"context"
	"testing"
)

// TestStore_ReadCached_NeverStale: the never-stale run — writers,
// truncates, renames over, syncs and background writeback under a small
// dirty budget, inodes evicted all the while — with readers that try
// ReadCached first, as the server's connection reader does: no read,
// served from memory or not, returns a block older than the last
// acknowledged write.
func TestStore_ReadCached_NeverStale(t *testing.T) {
	neverStaleRun(t, neverStale{evict: true, cached: true})
}

// TestStore_ReadCached_MemoryOnly: ReadCached answers exactly the reads
// whose blocks are all in memory — buffered or cached — and the end of
// the file; it declines the rest (an inode not in memory, a directory, a
// block on the device only, an inode whose lock is held, a deleted file)
// and never reads the device, nor starts a read-ahead.
func TestStore_ReadCached_MemoryOnly(t *testing.T) {
	cd := &countingDev{Device: newTestDevice(t, 64<<20)}
	s := openTest(t, cd, quiet(Options{}))
	data := patternData(5, 16*blockSize+300)
	ino := mustCreate(t, s, RootIno, "f", data)
	buf := make([]byte, 4*blockSize)
	want := func(what string, ino Ino, off uint64, wantN int, wantOK bool) {
		t.Helper()
		reads, ahead := cd.reads.Load(), s.CacheStats().ReadAheadBlocks
		n, ok := s.ReadCached(ino, off, buf)
		if ok != wantOK || (ok && n != wantN) {
			t.Fatalf("%s: ReadCached = %d, %v; want %d, %v", what, n, ok, wantN, wantOK)
		}
		if ok && !bytes.Equal(buf[:n], data[off:off+uint64(n)]) {
			t.Fatalf("%s: wrong bytes", what)
		}
		if cd.reads.Load() != reads || s.CacheStats().ReadAheadBlocks != ahead {
			t.Fatalf("%s: read the device or read ahead", what)
		}
	}
	want("dirty pages", ino, blockSize+5, len(buf), true)
	want("the end of the file", ino, uint64(len(data)), 0, true)
	want("the last bytes", ino, uint64(len(data))-10, 10, true)
	want("a directory", RootIno, 0, 0, false)
	want("no such inode", 1<<40, 0, 0, false)
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	want("cached by writeback", ino, 3*blockSize, len(buf), true)

	in := s.itab.peek(ino)
	in.mu.Lock()
	want("the inode's lock held", ino, 0, 0, false)
	in.mu.Unlock()

	s = remount(t, s, cd, quiet(Options{}))
	want("not in memory", ino, 0, 0, false)
	// A read of block 8 caches block 8 and nothing more: it does not
	// follow the inode's last read (none), so it does not read ahead.
	if _, err := s.Read(ino, 8*blockSize, make([]byte, blockSize)); err != nil {
		t.Fatal(err)
	}
	buf = buf[:blockSize]
	want("block 8, cached by the read", ino, 8*blockSize, blockSize, true)
	buf = buf[:4*blockSize]
	want("blocks 8-11: three on the device only", ino, 8*blockSize, 0, false)
	// A sequential read: ReadCached served block 8 and left the inode's
	// read position after it, so the Read of block 9 reads ahead.
	ahead := s.CacheStats().ReadAheadBlocks
	if _, err := s.Read(ino, 9*blockSize, make([]byte, blockSize)); err != nil {
		t.Fatal(err)
	}
	if s.CacheStats().ReadAheadBlocks == ahead {
		t.Fatal("a Read following a ReadCached did not read ahead")
	}
	want("read ahead", ino, 10*blockSize, len(buf), true)
	evictInodes(s)
	want("evicted", ino, 10*blockSize, 0, false)
	if _, err := s.Stat(ino); err != nil {
		t.Fatal(err)
	}
	want("loaded again, its epoch kept", ino, 10*blockSize, len(buf), true)

	if err := s.Unlink(RootIno, "f"); err != nil {
		t.Fatal(err)
	}
	want("unlinked", ino, 10*blockSize, 0, false)
	if cs := s.CacheStats(); cs.CachedReads == 0 {
		t.Fatalf("%+v: no cached read counted", cs)
	}
	closeCheck(t, s)
}

// TestStore_ReadCached_EvictedAfterPeek: an inode evicted between
// ReadCached's look-up and its lock, loaded again and truncated, must not
// be read through the old copy, whose size and epoch are the ones before
// the truncate (its blocks are still in the cache). The hook makes that
// happen in the window, deterministically.
func TestStore_ReadCached_EvictedAfterPeek(t *testing.T) {
	s := openTest(t, newTestDevice(t, 64<<20), quiet(Options{}))
	ino := mustCreate(t, s, RootIno, "f", patternData(2, 4*blockSize))
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, blockSize)
	if _, ok := s.ReadCached(ino, 0, buf); !ok {
		t.Fatal("ReadCached declined a cached block")
	}
	ran := false
	testHookReadCachedPeeked = func(got Ino) {
		if ran || got != ino {
			return
		}
		ran = true
		evictInodes(s)
		if err := s.Truncate(ino, 0); err != nil {
			t.Error(err)
		}
	}
	defer func() { testHookReadCachedPeeked = nil }()
	if n, ok := s.ReadCached(ino, 0, buf); ok && n != 0 {
		t.Fatalf("ReadCached returned %d bytes of a file truncated to 0 before it locked the inode", n)
	}
	if !ran {
		t.Fatal("the hook did not run")
	}
	if n, ok := s.ReadCached(ino, 0, buf); !ok || n != 0 {
		t.Fatalf("ReadCached after the truncate: %d, %v; want 0 bytes (the end of the file)", n, ok)
	}
	closeCheck(t, s)
}
