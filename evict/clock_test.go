package evict

import (
	"maps"
	"slices"
	"testing"
)

// oneShard returns a one-shard cache with a budget of budgetBytes, so that
// the CLOCK order is deterministic, and a record of OnEvict's keys.
func oneShard(t *testing.T, budgetBytes int64) (*Cache[*node], *[]uint64) {
	var evicted []uint64
	c := newCache(t, Options{BudgetBytes: budgetBytes, Shards: 1, OnEvict: func(key uint64, _ Entry) {
		evicted = append(evicted, key)
	}})
	return c, &evicted
}

func wantKeys(t *testing.T, c *Cache[*node], want ...uint64) {
	t.Helper()
	got := slices.Sorted(maps.Keys(keys(c)))
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("cached keys %v; want %v", got, want)
	}
}

// TestCache_Add_SecondChance: a hit saves an entry from the next eviction;
// the hand clears its bit and takes the next one instead.
func TestCache_Add_SecondChance(t *testing.T) {
	c, evicted := oneShard(t, 3)
	for k := uint64(1); k <= 3; k++ {
		c.Add(k, newNode(k, 1, false))
	}
	c.Get(1)
	c.Add(4, newNode(4, 1, false))
	wantKeys(t, c, 1, 3, 4)
	// 1's bit was cleared on the way, and the hand goes on towards the
	// head: 3, 4, then 5 — new entries go in at the head, not behind the
	// hand (SIEVE), so the hand meets 5 before it wraps round to 1.
	c.Add(5, newNode(5, 1, false))
	c.Add(6, newNode(6, 1, false))
	c.Add(7, newNode(7, 1, false))
	if want := []uint64{2, 3, 4, 5}; !slices.Equal(*evicted, want) {
		t.Fatalf("evicted %v; want %v", *evicted, want)
	}
}

// TestCache_Add_FIFOWithoutHits: with no hits SIEVE is FIFO.
func TestCache_Add_FIFOWithoutHits(t *testing.T) {
	c, evicted := oneShard(t, 3)
	for k := uint64(1); k <= 8; k++ {
		c.Add(k, newNode(k, 1, false))
	}
	wantKeys(t, c, 6, 7, 8)
	if want := []uint64{1, 2, 3, 4, 5}; !slices.Equal(*evicted, want) {
		t.Fatalf("evicted %v; want %v", *evicted, want)
	}
}

// TestCache_Add_AllReferenced: when every entry was hit, the hand clears
// every bit in its first revolution and evicts the oldest in its second.
func TestCache_Add_AllReferenced(t *testing.T) {
	c, evicted := oneShard(t, 3)
	for k := uint64(1); k <= 3; k++ {
		c.Add(k, newNode(k, 1, false))
		c.Get(k)
	}
	c.Add(4, newNode(4, 1, false))
	if want := []uint64{1}; !slices.Equal(*evicted, want) {
		t.Fatalf("evicted %v; want %v", *evicted, want)
	}
}

// TestCache_Add_ReplaceIsUse: replacing an entry counts as a hit.
func TestCache_Add_ReplaceIsUse(t *testing.T) {
	c, _ := oneShard(t, 3)
	for k := uint64(1); k <= 3; k++ {
		c.Add(k, newNode(k, 1, false))
	}
	c.Add(1, newNode(10, 1, false))
	c.Add(4, newNode(4, 1, false))
	wantKeys(t, c, 1, 3, 4)
}

// TestCache_Add_KeepsItsOwnEntry: an entry larger than the whole budget
// evicts everything else but stays (the "one entry" of the bound).
func TestCache_Add_KeepsItsOwnEntry(t *testing.T) {
	c, _ := oneShard(t, 10)
	for k := uint64(1); k <= 5; k++ {
		c.Add(k, newNode(k, 2, false))
	}
	c.Add(99, newNode(99, 50, false))
	wantKeys(t, c, 99)
	// The next Add evicts it like any other.
	c.Add(100, newNode(100, 1, false))
	wantKeys(t, c, 100)
}

// TestCache_Get_SetsReferenceBit looks at the bit itself.
func TestCache_Get_SetsReferenceBit(t *testing.T) {
	c, _ := oneShard(t, 10)
	c.Add(1, newNode(1, 1, false))
	it := c.shards[0].items[1]
	if it.ref.Load() {
		t.Fatal("a new entry starts referenced")
	}
	c.Get(1)
	if !it.ref.Load() {
		t.Fatal("Get did not set the reference bit")
	}
}
