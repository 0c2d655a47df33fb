package evict

import (
	"sync/atomic"

	"ustore/internal/assert"
)

// hashMul is 2^64 divided by the golden ratio (Fibonacci hashing): bytenrs
// are multiples of the node size, so their low bits are all zero, and the
// top bits of key×hashMul spread them evenly over the shards.
const hashMul = 0x9E3779B97F4A7C15

// Cache is a memory-bounded cache of entries keyed by uint64 (a node's
// bytenr), safe for concurrent use.
//
// Concurrency: the keys are split over shards by hash, each with its own
// RWMutex, map and SIEVE ring. A hit takes its shard's read lock only and
// sets the entry's reference bit with an atomic store. Everything else takes
// one shard's write lock at a time; no method but Check ever holds two
// shard locks. The budget is global: the total bytes are one atomic
// counter, and an Add that pushes it over the budget evicts in its own
// shard first, then in the others, round robin, one lock at a time.
// OnEvict and GetOrLoad's load run with no lock held.
type Cache[E Entry] struct {
	shards []shard[E]
	// shardShift turns a hash into a shard index: 64 − log2(len(shards)).
	// With one shard it is 64, and a uint64 shifted by 64 is 0.
	shardShift  uint
	onEvict     func(key uint64, e Entry)
	tryEvict    func(key uint64, e Entry) bool
	neverPinned bool

	// totals are this cache's bytes and entries; totals.budget is the
	// budget it shares with other caches (its own when Options.Budget is
	// nil), which holds the shared total, the pinned floor (budget.go) and
	// the round robin of eviction passes over every member's shards.
	totals totals
	// nextShard is where the budget's next weighted step sweeps this
	// cache (budget.go), round robin over its shards.
	nextShard atomic.Uint64
}

// New returns an empty cache. It panics when opts.Validate fails: a cache
// without a budget, or with a shard count the hash cannot split into, is a
// programming error (check flags with Validate first).
func New[E Entry](opts Options) *Cache[E] {
	if err := opts.Validate(); err != nil {
		panic(err)
	}
	n := opts.shardCount()
	c := &Cache[E]{
		shards:      make([]shard[E], n),
		shardShift:  64,
		onEvict:     opts.OnEvict,
		tryEvict:    opts.TryEvict,
		neverPinned: opts.NeverPinned,
	}
	c.totals.budget = opts.Budget
	if c.totals.budget == nil {
		c.totals.budget = NewBudget(opts.BudgetBytes)
	}
	for m := n; m > 1; m >>= 1 {
		c.shardShift--
	}
	for i := range c.shards {
		c.shards[i].init(&c.totals)
	}
	c.totals.budget.join(c)
	return c
}

// shardOf returns the index of key's shard and the shard.
func (c *Cache[E]) shardOf(key uint64) (int, *shard[E]) {
	i := int((key * hashMul) >> c.shardShift)
	return i, &c.shards[i]
}

// Get returns the entry cached under key. A hit sets the entry's
// reference bit; it takes only the shard's read lock.
func (c *Cache[E]) Get(key uint64) (E, bool) {
	_, s := c.shardOf(key)
	s.mu.RLock()
	e, ok := s.lookup(key)
	s.mu.RUnlock()
	if ok {
		s.hits.Add(1)
	} else {
		s.misses.Add(1)
	}
	return e, ok
}

// Add caches e under key, replacing (and re-charging) any entry cached
// there, then evicts clean entries if the cache is over its budget. The
// entry just added is not evicted by its own Add, even when it alone
// exceeds the budget. A replacement keeps its place in the ring and
// counts as a use; OnEvict is not called for the old entry.
func (c *Cache[E]) Add(key uint64, e E) {
	bytes := e.CacheBytes()
	assert.That(bytes >= 0, "evict: Entry.CacheBytes is negative")
	if c.neverPinned && e.Pinned() {
		assert.Failf("evict: a pinned entry added to a NeverPinned cache (key %d)", key)
	}
	i, s := c.shardOf(key)
	s.mu.Lock()
	it, ok := s.items[key]
	if ok {
		s.replaceLocked(it, e, bytes)
	} else {
		it = s.insertLocked(key, e, bytes)
	}
	s.mu.Unlock()
	c.afterInsert(i, it, bytes)
}

// Remove takes key's entry out of the cache, pinned or not, and returns it.
// OnEvict is not called. A GetOrLoad of key that is loading at the time
// still returns what it loads, but does not cache it: whatever made the
// caller remove the key may have made the loaded copy stale.
func (c *Cache[E]) Remove(key uint64) (E, bool) {
	_, s := c.shardOf(key)
	s.mu.Lock()
	if cl, ok := s.loading[key]; ok {
		cl.removed = true
	}
	it, ok := s.items[key]
	if ok {
		s.dropLocked(it)
	}
	s.mu.Unlock()
	if !ok {
		var zero E
		return zero, false
	}
	c.lowerFloor(it.bytes)
	return it.entry, true
}

// Len returns the number of cached entries.
func (c *Cache[E]) Len() int {
	return int(c.totals.entries.Load())
}

// Bytes returns the sum of the cached entries' charged bytes (this
// cache's; Budget.Bytes is the sum over the caches sharing its budget).
func (c *Cache[E]) Bytes() int64 {
	return c.totals.bytes.Load()
}

// Budget returns the budget the cache counts against.
func (c *Cache[E]) Budget() *Budget { return c.totals.budget }

// Range calls fn for each cached entry until fn returns false, for fsck and
// debugging. It copies one shard's entries under its read lock and calls fn
// with no lock held, so fn may use the cache; each shard is seen at one
// moment, the cache as a whole is not. The copy is bounded by the largest
// shard.
func (c *Cache[E]) Range(fn func(key uint64, e E) bool) {
	var batch []keyEntry[E]
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		batch = batch[:0]
		for key, it := range s.items {
			batch = append(batch, keyEntry[E]{key: key, entry: it.entry})
		}
		s.mu.RUnlock()
		for _, kv := range batch {
			if !fn(kv.key, kv.entry) {
				return
			}
		}
	}
}
