package evict

// The eviction ring of a shard, SIEVE (Zhang et al., "SIEVE is Simpler
// than LRU", NSDI 2024): a circular doubly linked list of its items in the
// order they came, from the oldest (tail) to the newest, and a hand that
// goes round it in that order. A hit sets an item's reference bit; when
// the cache is over budget the hand moves on, clearing set bits (a second
// chance) and skipping pinned items, and evicts the first clean,
// unreferenced item it meets. New items go in at the head — just before
// the tail in the ring — wherever the hand is: the one difference from
// CLOCK, which puts them just behind the hand. A new item is so reached as
// soon as the hand gets to the head, not a whole revolution later: blocks
// read once (a scan, a read-ahead nobody used) leave early, while items
// hit again keep their place. On the page cache's traces that is 2-4
// points of hit ratio over CLOCK (hit_ratio_test.go).
//
//	        tail                 head        hand moves ──►
//	         ▼                    ▼
//	   ┌──► [a] ──► [b] ──► [c] ──┘      link(n):  … [c] ──► [n] ──► [a] …
//	   └───────────────────────────┘                 (n, the new head)
//
// A linked ring, rather than a slice with swap-removal, keeps the order the
// algorithm promises (a deterministic test relies on it) and makes removal
// O(1) without moving any other item.

// link puts it into the ring at the head: just before the tail. The caller
// holds the write lock.
func (s *shard[E]) link(it *item[E]) {
	t := s.tail
	if t == nil {
		it.prev, it.next = it, it
		s.hand, s.tail = it, it
		return
	}
	it.prev, it.next = t.prev, t
	t.prev.next = it
	t.prev = it
}

// unlink takes it out of the ring; if the hand (or the tail) was on it, it
// moves to the next item. The caller holds the write lock.
func (s *shard[E]) unlink(it *item[E]) {
	if it.next == it {
		s.hand, s.tail = nil, nil
	} else {
		if s.hand == it {
			s.hand = it.next
		}
		if s.tail == it {
			s.tail = it.next
		}
		it.prev.next = it.next
		it.next.prev = it.prev
	}
	it.prev, it.next = nil, nil
}

// sweepLocked moves the hand until the budget's total (over every cache
// that shares it) is at most budgetBytes
// or the hand has made sweepsMax revolutions of the ring (as long as it was
// when the sweep began), evicting clean, unreferenced items on the way.
// exempt, the item whose Add started the pass, is never evicted by it;
// tryEvict, when not nil, keeps an unpinned item it declines
// (Options.TryEvict). When collect is set, the evicted entries are appended to victims for
// OnEvict. The caller holds the write lock.
//
// The bound on revolutions is what lets an all-pinned shard end the sweep:
// it stays over budget, and every pinned item the hand passed is counted in
// pinnedSkips.
func (s *shard[E]) sweepLocked(budgetBytes int64, exempt *item[E], tryEvict func(uint64, Entry) bool, victims []keyEntry[E], collect bool) []keyEntry[E] {
	stepsMax := sweepsMax * len(s.items)
	steps := 0
	// The hand is nil once the sweep has evicted every item.
	for ; steps < stepsMax && s.hand != nil && s.totals.budget.bytes.Load() > budgetBytes; steps++ {
		it := s.hand
		switch {
		case it == exempt:
			s.hand = it.next
		case it.ref.Load():
			it.ref.Store(false)
			s.hand = it.next
		case it.entry.Pinned() || tryEvict != nil && !tryEvict(it.key, it.entry):
			s.pinnedSkips.Add(1)
			s.hand = it.next
		default:
			// dropLocked moves the hand to it.next.
			s.dropLocked(it)
			s.evictions.Add(1)
			if collect {
				victims = append(victims, keyEntry[E]{key: it.key, entry: it.entry})
			}
		}
	}
	return victims
}
