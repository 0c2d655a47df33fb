package evict

import "ustore/internal/assert"

// Clear drops every unpinned entry and returns how many pinned entries
// remain, for unmount and for dropping a whole tree's nodes.
//
// It is the lesson of the 2013 btrfs patch "fix very slow inode eviction
// and fs unmount": tearing a structure down one element at a time, with
// the bookkeeping a single removal does, made unmount quadratic (98 s
// instead of 1.8 s). Here each shard is torn down in one linear walk of its
// ring under one lock acquisition: the pinned items are relinked into a
// fresh ring and a fresh map sized for them, and the old map is dropped
// whole — no per-entry map deletion, no hand movement, no budget checks.
// OnEvict, if set, is then called for each dropped entry with no lock held,
// and the drops count as evictions.
//
// In a NeverPinned cache without OnEvict nothing needs to be looked at:
// each shard's map and ring are dropped whole, in O(1) (dropAllLocked).
//
// A GetOrLoad in flight during Clear may cache its entry after Clear has
// passed its shard.
func (c *Cache[E]) Clear() int {
	pinned := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		var (
			dropped *item[E]
			n       int
		)
		if c.neverPinned && c.onEvict == nil {
			n = s.dropAllLocked()
		} else {
			dropped, n = s.clearLocked(c.tryEvict, c.onEvict != nil)
		}
		pinned += len(s.items)
		s.mu.Unlock()
		s.evictions.Add(int64(n))
		if c.onEvict != nil {
			for it := dropped; it != nil; it = it.next {
				c.onEvict(it.key, it.entry)
			}
		}
	}
	c.totals.budget.floorBytes.Store(0)
	return pinned
}

// DropAll empties the cache whole, pinned entries and all, in one step per
// shard (dropAllLocked): it calls neither Pinned nor TryEvict nor OnEvict,
// and the drops are not counted as evictions. It is for an owner tearing
// down whatever the entries stand for — the store's unmount, which has
// dropped its inode table's maps whole and needs their charges gone from
// the budget without visiting each inode (the 2013 btrfs lesson again).
// It returns how many entries it dropped.
func (c *Cache[E]) DropAll() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += s.dropAllLocked()
		s.mu.Unlock()
	}
	c.totals.budget.floorBytes.Store(0)
	return n
}

// clearLocked replaces the shard's ring and map by ones that hold only its
// pinned items (and those tryEvict, when not nil, declines), and returns how many it dropped and, when chain is set,
// the dropped items as a list linked through next (nil-terminated, no
// longer reachable from the shard) for OnEvict. Without chain the dropped
// items are not written at all: they go to the garbage collector with the
// old map. The caller holds the write lock.
func (s *shard[E]) clearLocked(tryEvict func(uint64, Entry) bool, chain bool) (dropped *item[E], n int) {
	count := len(s.items)
	var kept []*item[E]
	var droppedBytes int64
	it := s.hand
	for range count {
		next := it.next
		if it.entry.Pinned() || tryEvict != nil && !tryEvict(it.key, it.entry) {
			kept = append(kept, it)
		} else {
			if chain {
				it.prev, it.next = nil, dropped
				dropped = it
			}
			droppedBytes += it.bytes
			n++
		}
		it = next
	}
	assert.That(it == s.hand, "evict: ring length differs from map size")

	s.items = make(map[uint64]*item[E], len(kept))
	s.hand, s.tail = nil, nil
	for _, k := range kept {
		s.link(k)
		s.items[k.key] = k
	}
	s.bytes -= droppedBytes
	assert.That(s.bytes >= 0, "evict: shard bytes went negative")
	s.totals.addBytes(-droppedBytes)
	s.totals.entries.Add(-int64(n))
	s.checkAfterChange()
	return dropped, n
}

// dropAllLocked empties the shard without walking it: its map goes whole
// to the garbage collector, its ring with it (the items link only each
// other), and the totals drop by the shard's sums. It returns how many
// items it dropped. The caller holds the write lock; the cache is
// NeverPinned, so no item had to stay, or the caller is DropAll.
func (s *shard[E]) dropAllLocked() int {
	n := len(s.items)
	s.items = make(map[uint64]*item[E])
	s.hand, s.tail = nil, nil
	s.totals.addBytes(-s.bytes)
	s.totals.entries.Add(-int64(n))
	s.bytes = 0
	s.checkAfterChange()
	return n
}
