package evict

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// TestCache_Stress_Concurrent runs Get, GetOrLoad, Add, Remove, unpinning,
// Shrink, Check and a rare Clear from 16 goroutines (go test -race finds
// the races), then checks the totals against the entries: Bytes is the sum
// of their CacheBytes, and after a Shrink the cache is within budget +
// pinned. Pins only ever go from pinned to unpinned, so an evicted entry
// that reports Pinned in OnEvict was pinned when it was evicted.
func TestCache_Stress_Concurrent(t *testing.T) {
	const (
		goroutines = 16
		opsEach    = 4000
		keysN      = 1024
		budget     = 16 << 10
	)
	var evicted atomic.Int64
	c := newCache(t, Options{BudgetBytes: budget, Shards: 4, OnEvict: func(key uint64, e Entry) {
		if e.Pinned() {
			t.Errorf("evicted pinned entry %d", key)
		}
		evicted.Add(1)
	}})
	errLoad := errors.New("load failed")
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 42))
			newEntry := func(key uint64) *node {
				return newNode(key, 16+rng.Int64N(240), rng.IntN(8) == 0)
			}
			for i := range opsEach {
				key := uint64(rng.IntN(keysN)) << 14
				switch op := rng.IntN(1000); {
				case op < 400:
					if n, ok := c.Get(key); ok && n.id != key {
						t.Errorf("Get(%d) returned the node of %d", key, n.id)
					}
				case op < 650:
					fail := rng.IntN(20) == 0
					n, err := c.GetOrLoad(key, func() (*node, error) {
						if fail {
							return nil, errLoad
						}
						return newEntry(key), nil
					})
					if err == nil && n.id != key || err != nil && !errors.Is(err, errLoad) {
						t.Errorf("GetOrLoad(%d) = %v, %v", key, n, err)
					}
				case op < 850:
					c.Add(key, newEntry(key))
				case op < 950:
					c.Remove(key)
				case op < 990:
					if n, ok := c.Get(key); ok {
						n.pinned.Store(false)
					}
				case op < 998:
					c.Shrink()
				case op < 999:
					if err := c.Check(); err != nil {
						t.Errorf("Check during the run: %v", err)
					}
				default:
					if g == 0 && i%2 == 0 {
						c.Clear()
					}
				}
			}
		})
	}
	wg.Wait()

	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	if b, sum := c.Bytes(), sumBytes(c); b != sum {
		t.Fatalf("Bytes %d, entries' CacheBytes sum to %d", b, sum)
	}
	entries := 0
	c.Range(func(uint64, *node) bool { entries++; return true })
	if c.Len() != entries {
		t.Fatalf("Len %d, Range saw %d", c.Len(), entries)
	}
	c.Shrink()
	if b, p := c.Bytes(), pinnedBytes(c); b > budget+p {
		t.Fatalf("after Shrink: Bytes %d > budget %d + pinned %d", b, budget, p)
	}
	st := c.Stats()
	if st.Evictions != evicted.Load() || st.Evictions == 0 || st.PinnedSkips == 0 || st.Loads == 0 {
		t.Fatalf("Stats %+v, OnEvict calls %d: the run did not exercise eviction, pins and loads", st, evicted.Load())
	}
	t.Logf("stats %+v", st)
}
