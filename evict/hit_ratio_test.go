package evict

import (
	"container/list"
	"math/rand/v2"
	"testing"
)

// The policy's hit ratio on the page cache's workloads, against LRU (what
// CLOCK approximates) on the same trace: a Zipf reader over ten times the
// cache, alone and with a sequential scan of cold keys interleaved (a
// read-ahead stream beside hot data). Deterministic (seeded traces); the
// figures are logged for docs/BENCHMARKS.md.

const (
	ratioKeys    = 100_000
	ratioEntries = ratioKeys / 10
	ratioOps     = 1_000_000
)

// ratioTrace returns the keys a workload reads: Zipf (s=1.1) over
// ratioKeys, and with scan set, every third read the next of a sequential
// run over keys no Zipf read touches.
func ratioTrace(scan bool) []uint64 {
	rng := rand.New(rand.NewPCG(1, 2))
	z := rand.NewZipf(rng, 1.1, 1, ratioKeys-1)
	trace := make([]uint64, 0, ratioOps)
	next := uint64(ratioKeys)
	for i := range ratioOps {
		if scan && i%3 == 2 {
			trace = append(trace, next)
			next++
			continue
		}
		// Spread the hot keys over the key space, as inode epochs and
		// block indexes are.
		trace = append(trace, z.Uint64()*0x9E3779B97F4A7C15)
	}
	return trace
}

// clockRatio replays trace on a Cache of ratioEntries one-byte entries
// with shards shards (0: the default), as the page cache uses it: Get,
// and Add on a miss.
func clockRatio(trace []uint64, shards int) float64 {
	c := New[*node](Options{BudgetBytes: ratioEntries, Shards: shards})
	hits := 0
	for _, k := range trace {
		if _, ok := c.Get(k); ok {
			hits++
			continue
		}
		c.Add(k, newNode(k, 1, false))
	}
	return float64(hits) / float64(len(trace))
}

// lruRatio replays trace on an exact LRU of ratioEntries entries.
func lruRatio(trace []uint64) float64 {
	l := list.New()
	m := map[uint64]*list.Element{}
	hits := 0
	for _, k := range trace {
		if e, ok := m[k]; ok {
			hits++
			l.MoveToFront(e)
			continue
		}
		m[k] = l.PushFront(k)
		if l.Len() > ratioEntries {
			delete(m, l.Remove(l.Back()).(uint64))
		}
	}
	return float64(hits) / float64(len(trace))
}

// TestCache_HitRatio_ZipfAndScan: the sharded CLOCK keeps within 2 points
// of LRU's hit ratio on both workloads.
func TestCache_HitRatio_ZipfAndScan(t *testing.T) {
	for _, w := range []struct {
		name string
		scan bool
	}{{"zipf", false}, {"zipf+scan", true}} {
		trace := ratioTrace(w.scan)
		lru := lruRatio(trace)
		one, many := clockRatio(trace, 1), clockRatio(trace, 16)
		t.Logf("%s: hit ratio LRU %.4f, CLOCK 1 shard %.4f, CLOCK 16 shards %.4f", w.name, lru, one, many)
		for _, got := range []float64{one, many} {
			if got < lru-0.02 {
				t.Errorf("%s: CLOCK hit ratio %.4f, LRU %.4f", w.name, got, lru)
			}
		}
	}
}
