package evict

// Stats are the cache's counters since New, and its current size.
// Benchmarks print them; tests assert on them; `ustore serve` serves them
// on /metrics (the tag marks the values that are not counts since New).
type Stats struct {
	Hits        int64 // Get and GetOrLoad calls that found the key cached
	Misses      int64 // Get and GetOrLoad calls that did not (a GetOrLoad that waited on another's load included)
	Loads       int64 // calls of a GetOrLoad load function
	Evictions   int64 // entries dropped by the cache: by the hand, and by Clear
	PinnedSkips int64 // times the hand passed a pinned entry it would otherwise have evicted
	Bytes       int64 `metric:"gauge"` // the cached entries' charged bytes, as Bytes
	Entries     int64 `metric:"gauge"` // the cached entries, as Len
	// PinnedFloorBytes is the pinned floor (budget.go): bytes the last
	// eviction pass could not evict, above which the budget applies until
	// a pass reaches it again. 0 when the last pass reached the budget.
	PinnedFloorBytes int64 `metric:"gauge"`
}

// Stats returns a snapshot of the counters. Each is read atomically, not
// all together.
func (c *Cache[E]) Stats() Stats {
	var st Stats
	for i := range c.shards {
		s := &c.shards[i]
		st.Hits += s.hits.Load()
		st.Misses += s.misses.Load()
		st.Loads += s.loads.Load()
		st.Evictions += s.evictions.Load()
		st.PinnedSkips += s.pinnedSkips.Load()
	}
	st.Bytes = c.totals.bytes.Load()
	st.Entries = c.totals.entries.Load()
	st.PinnedFloorBytes = c.totals.budget.floorBytes.Load()
	return st
}
