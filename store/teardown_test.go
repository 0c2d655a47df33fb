package store

import (
	"context"
	"fmt"
	"testing"

	"ustore/journal"
)

// teardownRun creates n files of blocks blocks each, reads each file's
// first block (so the inode is in memory with one cached block), closes
// the store, and returns the teardown's steps: what unmount (and nothing
// else: the count starts at zero after the reads) visited one by one.
func teardownRun(t *testing.T, n, blocks int, ab journal.Ablations) (steps uint64, inodes int, pages int64) {
	t.Helper()
	d := newTestDevice(t, int64(256<<20))
	// The default cache (a quarter of RAM, at most 4 GiB) holds the n
	// inodes and their blocks.
	opts := quiet(Options{Ablations: ab})
	s := openTest(t, d, opts)
	var inos []Ino
	for i := range n {
		a, err := s.Create(RootIno, fmt.Sprintf("f%d", i), 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write(a.Ino, 0, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if blocks > 1 {
			// A sparse tail: the file spans blocks blocks, one is data.
			if err := s.Truncate(a.Ino, uint64(blocks)*blockSize); err != nil {
				t.Fatal(err)
			}
		}
		inos = append(inos, a.Ino)
	}
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	for _, ino := range inos {
		if _, err := s.Read(ino, 0, buf); err != nil {
			t.Fatal(err)
		}
	}
	inodes, pages = s.itab.count(), s.CacheStats().Pages
	s.stats.teardownSteps.Store(0)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s.stats.teardownSteps.Load(), inodes, pages
}

// TestStore_Close_TeardownLinear: unmount with 100k inodes in memory, each
// with a cached block, visits none of them one by one — the inode table's
// maps and the page cache's shards are dropped whole — so it takes no
// step per inode or block whatever their number, and finishes well within
// the test's timeout; a teardown that went inode by inode, range by range over
// every file's size, counts (and takes) steps in proportion to the blocks,
// as the per-range ablation shows.
func TestStore_Close_TeardownLinear(t *testing.T) {
	n := 100_000
	if testing.Short() || raceEnabled() {
		n = 10_000
	}
	steps, inodes, pages := teardownRun(t, n, 1, journal.Ablations{})
	if inodes < n || pages < int64(n) {
		t.Fatalf("%d inodes and %d cached pages in memory, want %d of each", inodes, pages, n)
	}
	if steps != 0 {
		t.Fatalf("unmount of %d inodes and %d pages visited %d of them one by one, want none", inodes, pages, steps)
	}
	// The ablation: files of 64 blocks, one cached; per-range teardown
	// visits every block of every file, and every inode.
	const blocks = 64
	ablated, inodesA, _ := teardownRun(t, n/100, blocks, journal.Ablations{TeardownPerRange: true})
	if want := uint64(inodesA) * (blocks + 1); ablated < want-blocks-1 {
		t.Fatalf("per-range teardown of %d files of %d blocks: %d steps, want about %d", inodesA, blocks, ablated, want)
	}
}
