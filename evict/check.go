package evict

import "fmt"

// Check verifies the cache's structure — Invariants 1 and 2 of doc.go —
// and returns an error matching ErrCheck on the first break it finds. It
// holds every shard's read lock at once (in index order, the one place
// where more than one shard lock is held), so the totals it compares are
// consistent even under concurrent use; it takes time linear in the
// entries. Tests and fsck call it.
func (c *Cache[E]) Check() error {
	for i := range c.shards {
		c.shards[i].mu.RLock()
	}
	defer func() {
		for i := range c.shards {
			c.shards[i].mu.RUnlock()
		}
	}()
	var bytes, entries int64
	for i := range c.shards {
		s := &c.shards[i]
		if err := s.checkLocked(); err != nil {
			return fmt.Errorf("shard %d: %w", i, err)
		}
		for key := range s.items {
			if j, _ := c.shardOf(key); j != i {
				return fmt.Errorf("%w: key %d in shard %d, hashes to %d", ErrCheck, key, i, j)
			}
		}
		bytes += s.bytes
		entries += int64(len(s.items))
	}
	if got := c.totals.bytes.Load(); got != bytes {
		return fmt.Errorf("%w: total bytes %d, shards hold %d", ErrCheck, got, bytes)
	}
	if got := c.totals.entries.Load(); got != entries {
		return fmt.Errorf("%w: total entries %d, shards hold %d", ErrCheck, got, entries)
	}
	return nil
}

// checkLocked verifies one shard: the ring holds exactly the map's items,
// each once, with consistent links; the hand is nil iff the shard is empty;
// the shard's bytes are the sum of its items'. The caller holds mu in
// either mode.
func (s *shard[E]) checkLocked() error {
	n := len(s.items)
	if (s.hand == nil) != (n == 0) || (s.tail == nil) != (n == 0) {
		return fmt.Errorf("%w: hand %v, tail %v with %d items", ErrCheck, s.hand != nil, s.tail != nil, n)
	}
	if s.tail != nil && s.items[s.tail.key] != s.tail {
		return fmt.Errorf("%w: the tail (key %d) is not the map's", ErrCheck, s.tail.key)
	}
	var bytes int64
	it := s.hand
	for k := range n {
		if it == nil || it.next == nil || it.next.prev != it {
			return fmt.Errorf("%w: ring broken at item %d", ErrCheck, k)
		}
		if k > 0 && it == s.hand {
			return fmt.Errorf("%w: ring of %d items, map of %d", ErrCheck, k, n)
		}
		if s.items[it.key] != it {
			return fmt.Errorf("%w: ring item %d (key %d) is not the map's", ErrCheck, k, it.key)
		}
		if it.bytes < 0 {
			return fmt.Errorf("%w: key %d charged %d bytes", ErrCheck, it.key, it.bytes)
		}
		bytes += it.bytes
		it = it.next
	}
	if it != s.hand {
		return fmt.Errorf("%w: ring longer than the map's %d items", ErrCheck, n)
	}
	if bytes != s.bytes {
		return fmt.Errorf("%w: shard bytes %d, items hold %d", ErrCheck, s.bytes, bytes)
	}
	return nil
}
