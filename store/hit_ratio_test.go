package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestPageCache_HitRatio_InodesEvicted: a Zipf reader over files whose
// inodes all leave memory every 64 reads, whose blocks all fit the cache,
// hits the cache on nearly every read once each block was read: an inode
// evicted and loaded again finds its blocks (kept_epochs.go). When a
// reloaded inode began a fresh epoch instead, every reload missed all its
// blocks, and their stranded copies filled the budget: 0.746 on this
// workload with the inode table then capped at 64 inodes, with 3,934
// pages cached for 1,024 blocks, against 1.000 and 1,032.
func TestPageCache_HitRatio_InodesEvicted(t *testing.T) {
	const (
		files  = 512
		blocks = 2
		reads  = 20000
		// evictEvery: the inodes all leave memory every so many reads
		// (the budget, which they fit, would keep them).
		evictEvery = 64
	)
	s := openTest(t, newTestDevice(t, 64<<20), quiet(Options{CacheBytes: 16 << 20}))
	inos := make([]Ino, files)
	for i := range inos {
		inos[i] = mustCreate(t, s, RootIno, fmt.Sprintf("f%d", i), patternData(byte(i), blocks*blockSize))
	}
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	evictInodes(s)
	zipf := rand.NewZipf(rand.New(rand.NewPCG(1, 2)), 1.1, 1, files-1)
	before := s.CacheStats()
	buf := make([]byte, blocks*blockSize)
	for i := range reads {
		if _, err := s.Read(inos[zipf.Uint64()], 0, buf); err != nil {
			t.Fatal(err)
		}
		if i%evictEvery == evictEvery-1 {
			evictInodes(s)
		}
	}
	after := s.CacheStats()
	hits, misses := after.PageHits-before.PageHits, after.PageMisses-before.PageMisses
	ratio := float64(hits) / float64(hits+misses)
	t.Logf("hit ratio %.3f (%d hits, %d misses), %d inodes in memory, %+v", ratio, hits, misses, s.itab.count(), after)
	if ratio < 0.9 {
		t.Fatalf("hit ratio %.3f over files that all fit the cache, want ≥ 0.9", ratio)
	}
	closeCheck(t, s)
}
