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
	opts := quiet(Options{InodeCacheMax: 4 * n, Ablations: ab})
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
// with a cached block, visits each inode and each cached block once — the
// steps are exactly their number, so n and 4n differ by 4×, not 16×, and
// a teardown that went range by range over every file's size, or
// rescanned the cache per inode, would count (and take) far more. The
// per-range ablation shows the count that the bulk teardown avoids.
func TestStore_Close_TeardownLinear(t *testing.T) {
	n := 100_000
	if testing.Short() || raceEnabled() {
		n = 10_000
	}
	steps, inodes, pages := teardownRun(t, n, 1, journal.Ablations{})
	if inodes < n || pages < int64(n) {
		t.Fatalf("%d inodes and %d cached pages in memory, want %d of each", inodes, pages, n)
	}
	if want := uint64(inodes) + uint64(pages); steps != want {
		t.Fatalf("unmount of %d inodes and %d pages took %d steps, want %d", inodes, pages, steps, want)
	}
	small, inodesS, pagesS := teardownRun(t, n/4, 1, journal.Ablations{})
	if small != uint64(inodesS)+uint64(pagesS) || steps > 4*small+16 {
		t.Fatalf("teardown of %d inodes: %d steps, of %d: %d — not linear", n/4, small, n, steps)
	}
	// The ablation: files of 64 blocks, one cached; per-range teardown
	// visits every block of every file.
	const blocks = 64
	ablated, inodesA, _ := teardownRun(t, n/100, blocks, journal.Ablations{TeardownPerRange: true})
	bulk, _, _ := teardownRun(t, n/100, blocks, journal.Ablations{})
	if ablated < uint64(inodesA-1)*blocks || bulk*8 > ablated {
		t.Fatalf("per-range teardown of %d files of %d blocks: %d steps, bulk %d", inodesA, blocks, ablated, bulk)
	}
}
