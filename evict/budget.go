package evict

// Keeping the caches within their budget.
//
// The total compared with the budget is the Budget's: the sum over every
// cache that shares it (the node cache and the data page cache share one,
// so that --cache-size bounds both). After an insertion, while the total is
// over BudgetBytes, an eviction pass sweeps the inserting shard, then every
// other shard of every member cache once, round robin from a rotating
// start, each at most sweepsMax revolutions of its ring, and
// stops as soon as the total is within budget. A shard is swept under its
// write lock, so no hit can set a bit the hand has cleared: two revolutions
// evict every clean entry of the shard. A pass that visits every shard and
// is still over budget gives up: what is left is pinned, or is the entry
// just added, or was added to a shard after the pass had swept it.
//
// The pinned floor. A pass that gives up has called Pinned on every entry,
// so running one on each Add would make an over-pinned cache quadratic —
// every new dirty node would rescan all the others, the kind of cost the
// 2013 btrfs eviction patch took out of unmount. So a pass that gives up
// records the bytes it could not evict as the floor, and the next pass
// starts only when the total exceeds BudgetBytes + floor: one full scan per
// BudgetBytes added, not one per Add. A pass that reaches the budget
// resets the floor to 0; Remove lowers it by what it removes; Clear resets
// it. Entries that become unpinned do not lower it (the cache is not told),
// so whoever unpins many entries at once — the engine after a transaction
// commit — calls Shrink.
//
// The resulting bound, with no concurrent calls: after an Add, GetOrLoad or
// Shrink, Bytes() ≤ max(BudgetBytes + floor, pinned + the entry just
// added), where floor ≤ the bytes pinned when a pass last gave up. While no
// entry is unpinned behind the cache's back (or Shrink follows), that is
// within BudgetBytes + the pinned bytes + one entry. Concurrent Adds can
// each have one entry in flight on top.

// afterInsert runs an eviction pass if the insertion of it, charged bytes,
// in shard i took the budget's total past the budget plus the pinned floor.
func (c *Cache[E]) afterInsert(i int, it *item[E], bytes int64) {
	b := c.totals.budget
	// total − floor > budget, not total > budget + floor: the sum could
	// overflow with a budget near math.MaxInt64.
	if b.bytes.Load()-b.floorBytes.Load() > b.budgetBytes {
		c.evictPass(i, it, bytes)
	}
}

// Shrink runs an eviction pass whatever the pinned floor, and returns how
// many entries it evicted, from this cache and the others sharing its
// budget. Call it after unpinning many entries (a transaction commit makes
// its dirty nodes clean), so that the cache gets back within budget
// without waiting for the next Add.
func (c *Cache[E]) Shrink() int {
	return c.evictPass(-1, nil, 0)
}

// evictPass evicts clean entries until the budget's total is within the
// budget: in c's shard first (−1 for none), then in every shard of every
// cache that shares the budget, round robin from a rotating start. exempt,
// charged exemptBytes, is the item whose insertion started the pass; it is
// never evicted by it. It returns how many entries it evicted, and sets the
// pinned floor.
func (c *Cache[E]) evictPass(first int, exempt *item[E], exemptBytes int64) int {
	b := c.totals.budget
	ms := b.memberList()
	evicted := 0
	// A cache alone in its budget sweeps its inserting shard first (its
	// lock is warm). Caches sharing a budget do not: each step sweeps the
	// next shard of a member picked in proportion to the bytes it holds
	// (pickMember), as one hand going round all their entries
	// would, so that a cache that inserts much (data pages read once)
	// does not just recycle its own entries while the other's cold ones
	// stay, nor wear out a small member's reference bits faster than a
	// large one's.
	if first >= 0 && len(ms) == 1 {
		evicted += c.evictShard(first, exempt)
		if b.bytes.Load() <= b.budgetBytes {
			b.floorBytes.Store(0)
			return evicted
		}
	}
	if len(ms) > 1 {
		for range b.shardTotal(ms) {
			m := b.pickMember(ms)
			i := m.nextShardOf()
			if m == member(c) && i == first {
				evicted += c.evictShard(i, exempt)
			} else {
				evicted += m.evictShardOf(i)
			}
			if b.bytes.Load() <= b.budgetBytes {
				b.floorBytes.Store(0)
				return evicted
			}
		}
		// Still over: the round robin below visits every shard once, so
		// that a pass that gives up has seen them all.
	}
	n := b.shardTotal(ms)
	start := int(b.nextShard.Add(1) % uint64(n))
	for k := range n {
		m, i := memberShard(ms, (start+k)%n)
		switch {
		case m != member(c) || i != first:
			evicted += m.evictShardOf(i)
		case len(ms) > 1:
			evicted += c.evictShard(i, exempt)
		}
		if b.bytes.Load() <= b.budgetBytes {
			b.floorBytes.Store(0)
			return evicted
		}
	}
	b.floorBytes.Store(max(0, b.bytes.Load()-exemptBytes))
	return evicted
}

// evictShard sweeps shard i under its write lock, then calls OnEvict for
// what it evicted with no lock held. It returns how many it evicted.
func (c *Cache[E]) evictShard(i int, exempt *item[E]) int {
	s := &c.shards[i]
	var inline [victimsInline]keyEntry[E]
	collect := c.onEvict != nil
	s.mu.Lock()
	before := len(s.items)
	victims := s.sweepLocked(c.totals.budget.budgetBytes, exempt, c.tryEvict, inline[:0], collect)
	evicted := before - len(s.items)
	s.mu.Unlock()
	for _, v := range victims {
		c.onEvict(v.key, v.entry)
	}
	return evicted
}

// shardCount, evictShardOf, nextShardOf and bytesHeld make a Cache a
// member of its Budget.
func (c *Cache[E]) shardCount() int { return len(c.shards) }

func (c *Cache[E]) nextShardOf() int { return int(c.nextShard.Add(1) % uint64(len(c.shards))) }

func (c *Cache[E]) bytesHeld() int64 { return c.totals.bytes.Load() }

func (c *Cache[E]) evictShardOf(i int) int { return c.evictShard(i, nil) }

// lowerFloor lowers the pinned floor by bytes that left the cache, down to
// zero: those bytes no longer hold the total up.
func (c *Cache[E]) lowerFloor(bytes int64) {
	f := &c.totals.budget.floorBytes
	for {
		v := f.Load()
		if v == 0 {
			return
		}
		if f.CompareAndSwap(v, max(0, v-bytes)) {
			return
		}
	}
}
