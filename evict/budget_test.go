package evict

import (
	"math/rand/v2"
	"testing"
)

func TestCache_Add_RespectsBudget(t *testing.T) {
	evicted := 0
	c := newCache(t, Options{BudgetBytes: 100, Shards: 8, OnEvict: func(uint64, Entry) { evicted++ }})
	for k := range uint64(1000) {
		c.Add(k<<14, newNode(k, 10, false))
		if c.Bytes() > 100 {
			t.Fatalf("after Add %d: Bytes = %d over the budget of 100", k, c.Bytes())
		}
	}
	st := c.Stats()
	if c.Len() != 10 || st.Evictions != 990 || evicted != 990 || st.PinnedFloorBytes != 0 {
		t.Fatalf("Len %d, Stats %+v, OnEvict calls %d; want 10 entries, 990 evictions, floor 0", c.Len(), st, evicted)
	}
}

// TestCache_Add_PinnedNeverEvicted: pinned entries stay however far over
// budget the cache is, and become evictable once unpinned.
func TestCache_Add_PinnedNeverEvicted(t *testing.T) {
	c := newCache(t, Options{BudgetBytes: 50, Shards: 4, OnEvict: func(key uint64, e Entry) {
		if e.Pinned() {
			t.Errorf("OnEvict(%d) of a pinned entry", key)
		}
	}})
	var pinned []*node
	for k := range uint64(20) {
		n := newNode(k, 10, true)
		pinned = append(pinned, n)
		c.Add(k, n)
	}
	for k := uint64(100); k < 400; k++ {
		c.Add(k, newNode(k, 10, false))
		if b := c.Bytes(); b > 50+200+10 {
			t.Fatalf("after Add %d: Bytes = %d; bound is budget 50 + pinned 200 + one entry 10", k, b)
		}
	}
	for _, n := range pinned {
		if got, ok := c.Get(n.id); !ok || got != n {
			t.Fatalf("pinned entry %d was evicted", n.id)
		}
	}
	if st := c.Stats(); st.PinnedSkips == 0 {
		t.Fatalf("Stats %+v: the hand never skipped a pinned entry", st)
	}

	// Unpinned, they go at the next Shrink (the commit's call).
	for _, n := range pinned {
		n.pinned.Store(false)
	}
	c.Shrink()
	if b := c.Bytes(); b > 50 {
		t.Fatalf("after unpin and Shrink: Bytes = %d; want at most the budget 50", b)
	}
	if st := c.Stats(); st.PinnedFloorBytes != 0 {
		t.Fatalf("floor %d after a pass that reached the budget", st.PinnedFloorBytes)
	}
}

// TestCache_Add_UnpinnedEvictedWithoutShrink: without Shrink, unpinned
// entries still go once Adds push the cache past budget + floor.
func TestCache_Add_UnpinnedEvictedWithoutShrink(t *testing.T) {
	c := newCache(t, Options{BudgetBytes: 50, Shards: 1})
	for k := range uint64(20) {
		c.Add(k, newNode(k, 10, true))
	}
	c.Range(func(_ uint64, n *node) bool { n.pinned.Store(false); return true })
	for k := uint64(100); k < 130; k++ {
		c.Add(k, newNode(k, 10, false))
	}
	if b := c.Bytes(); b > 50 {
		t.Fatalf("Bytes = %d; want at most the budget 50", b)
	}
	for k := range uint64(20) {
		if _, ok := c.Get(k); ok {
			t.Fatalf("unpinned entry %d is still cached", k)
		}
	}
}

// TestCache_Add_AllPinnedEnds: a pass over an all-pinned cache ends after
// sweepsMax revolutions of each shard's hand, counting every pinned entry
// it passed, and evicts nothing (Invariant 5, exactly).
func TestCache_Add_AllPinnedEnds(t *testing.T) {
	for _, shards := range []int{1, 4} {
		c := newCache(t, Options{BudgetBytes: 1000, Shards: shards})
		const pinnedN = 100
		for k := range uint64(pinnedN) {
			c.Add(k<<14, newNode(k, 1, true))
		}
		c.Add(1<<40, newNode(1<<40, 1000, false)) // 1100 bytes: over budget
		st := c.Stats()
		if st.PinnedSkips != sweepsMax*pinnedN || st.Evictions != 0 || c.Len() != pinnedN+1 {
			t.Fatalf("%d shards: Stats %+v; want %d pinned skips, no eviction", shards, st, sweepsMax*pinnedN)
		}
		if st.PinnedFloorBytes != pinnedN {
			t.Fatalf("%d shards: floor %d; want the %d pinned bytes", shards, st.PinnedFloorBytes, pinnedN)
		}
		// Shrink is not exempt from anything: the big entry goes.
		if n := c.Shrink(); n != 1 || c.Bytes() != pinnedN {
			t.Fatalf("%d shards: Shrink evicted %d, Bytes %d; want 1, %d", shards, n, c.Bytes(), pinnedN)
		}
	}
}

// TestCache_Add_PinnedFloorAmortizes: with more pinned bytes than budget,
// Adds of clean entries cost one full scan per BudgetBytes added, not one
// per Add, and still keep within budget + pinned + one entry.
func TestCache_Add_PinnedFloorAmortizes(t *testing.T) {
	const budget, pinnedN, cleanN = 100, 1000, 2000
	c := newCache(t, Options{BudgetBytes: budget, Shards: 1})
	for k := range uint64(pinnedN) {
		c.Add(k, newNode(k, 1, true))
	}
	for k := uint64(pinnedN); k < pinnedN+cleanN; k++ {
		c.Add(k, newNode(k, 1, false))
		if b := c.Bytes(); b > budget+pinnedN+1 {
			t.Fatalf("after Add %d: Bytes = %d over budget %d + pinned %d + 1", k, b, budget, pinnedN)
		}
	}
	// A pass goes twice round at most ~1100 entries, once per ~100 Adds:
	// about 20 passes for the clean entries (and 10 while pinning). A pass
	// per Add would be ~4 million skips.
	if st := c.Stats(); st.PinnedSkips > 100_000 {
		t.Fatalf("PinnedSkips = %d: the floor did not spare rescans", st.PinnedSkips)
	}
}

// TestCache_Add_BoundHolds: random sizes, random pins, several shards; after
// every Add the cache is within budget + pinned + that entry (Invariant 4).
func TestCache_Add_BoundHolds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const budget = 4096
	c := newCache(t, Options{BudgetBytes: budget, Shards: 4})
	var live []*node
	for i := range 5000 {
		key := uint64(rng.IntN(2000)) << 14
		n := newNode(key, 1+rng.Int64N(200), rng.IntN(10) == 0)
		c.Add(key, n)
		live = append(live, n)
		if b, p := c.Bytes(), pinnedBytes(c); b > budget+p+n.bytes {
			t.Fatalf("Add %d: Bytes %d > budget %d + pinned %d + entry %d", i, b, budget, p, n.bytes)
		}
		if i%500 == 499 { // a commit: unpin everything, then Shrink
			for _, n := range live {
				n.pinned.Store(false)
			}
			live = live[:0]
			c.Shrink()
			if b := c.Bytes(); b > budget {
				t.Fatalf("after commit and Shrink: Bytes %d over budget %d", b, budget)
			}
		}
	}
}

// TestCache_Remove_LowersFloor: removing pinned entries lowers the floor,
// so the budget applies again sooner.
func TestCache_Remove_LowersFloor(t *testing.T) {
	c := newCache(t, Options{BudgetBytes: 10, Shards: 1})
	for k := range uint64(30) {
		c.Add(k, newNode(k, 1, true))
	}
	if f := c.Stats().PinnedFloorBytes; f == 0 {
		t.Fatal("no floor after passes over an all-pinned cache")
	}
	for k := range uint64(30) {
		c.Remove(k)
	}
	if f := c.Stats().PinnedFloorBytes; f != 0 {
		t.Fatalf("floor %d after removing every entry; want 0", f)
	}
}

// TestCache_OnEvict_CallsBack: OnEvict runs with no lock held, so it may
// use the cache (Invariant 6); a deadlock would hang the test.
func TestCache_OnEvict_CallsBack(t *testing.T) {
	var c *Cache[*node]
	calls := 0
	c = newCache(t, Options{BudgetBytes: 10, Shards: 1, OnEvict: func(key uint64, _ Entry) {
		calls++
		c.Get(key)
		if calls < 5 {
			c.Add(key+1000, newNode(key+1000, 1, false))
		}
	}})
	for k := range uint64(30) {
		c.Add(k, newNode(k, 1, false))
	}
	if calls < 20 || c.Bytes() > 10+1 {
		t.Fatalf("OnEvict calls %d, Bytes %d", calls, c.Bytes())
	}
}
