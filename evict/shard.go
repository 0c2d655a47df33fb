package evict

import (
	"sync"
	"sync/atomic"

	"ustore/internal/assert"
)

// shard is one independently locked part of the cache: the keys whose hash
// selects it, in a map for lookups and a SIEVE ring for eviction (clock.go).
//
// Who touches what: mu's read lock is enough to look an item up and set
// its reference bit (Get's hit path); everything that changes items, hand,
// bytes, loading or an item's links holds mu's write lock. The counters are
// atomic because hits and misses are counted under the read lock. The
// cache-wide totals are updated under the write lock too, so a caller that
// holds every shard's read lock (Check) sees them consistent.
type shard[E Entry] struct {
	// The first cache line holds what a hit touches: the lock (which every
	// reader writes), the hit and miss counters, and the map and hand
	// fields. A hit so moves one line between cores, not two.
	mu           sync.RWMutex
	hits, misses atomic.Int64
	// items maps a key to its item; every item is also in the ring.
	items map[uint64]*item[E]
	// hand is the next item the hand looks at; nil iff items is
	// empty. New items go in at the head, just before tail (link,
	// clock.go), wherever the hand is.
	hand *item[E]
	// bytes is the sum of the items' charged bytes.
	bytes int64
	// tail is the oldest item: new items go just before it, at the head
	// of the ring (clock.go). nil iff items is empty.
	tail *item[E]

	// loading holds the in-flight GetOrLoad call of each key being loaded:
	// at most one per key, and at most one per goroutine in all.
	loading map[uint64]*call[E]
	// totals are the cache-wide counts this shard adds into.
	totals *totals

	loads, evictions, pinnedSkips atomic.Int64

	// The padding makes a shard two cache lines (TestShard_Size), so that
	// no shard's hot line is shared with its neighbour's.
	_ [16]byte
}

// totals are the cache-wide sums of the shards' bytes and item counts,
// and the budget the cache shares: every change of bytes is added to the
// budget's total too (addBytes), so that the budget's total is the sum
// over its caches.
type totals struct {
	bytes, entries atomic.Int64
	budget         *Budget
}

// addBytes adds delta to the cache's total and to its budget's.
func (t *totals) addBytes(delta int64) {
	t.bytes.Add(delta)
	t.budget.bytes.Add(delta)
}

func (s *shard[E]) init(t *totals) {
	s.items = make(map[uint64]*item[E])
	s.loading = make(map[uint64]*call[E])
	s.totals = t
}

// lookup returns the entry cached under key and sets its reference bit.
// The caller holds mu, in either mode. The bit is stored only when clear, so
// that hits on a hot entry read its cache line without writing it.
func (s *shard[E]) lookup(key uint64) (E, bool) {
	it, ok := s.items[key]
	if !ok {
		var zero E
		return zero, false
	}
	if !it.ref.Load() {
		it.ref.Store(true)
	}
	return it.entry, true
}

// insertLocked caches e under key, which must not be cached, and returns
// its item.
func (s *shard[E]) insertLocked(key uint64, e E, bytes int64) *item[E] {
	_, dup := s.items[key]
	assert.That(!dup, "evict: insert of a key already cached")
	it := &item[E]{key: key, entry: e, bytes: bytes}
	s.link(it)
	s.items[key] = it
	s.bytes += bytes
	s.totals.addBytes(bytes)
	s.totals.entries.Add(1)
	s.checkAfterChange()
	return it
}

// replaceLocked puts e in place of it's entry, keeping its place in the
// ring, and marks it referenced: a replacement is a use.
func (s *shard[E]) replaceLocked(it *item[E], e E, bytes int64) {
	delta := bytes - it.bytes
	it.entry = e
	it.bytes = bytes
	it.ref.Store(true)
	s.bytes += delta
	s.totals.addBytes(delta)
	s.checkAfterChange()
}

// dropLocked takes it out of the shard: ring, map and totals.
func (s *shard[E]) dropLocked(it *item[E]) {
	s.unlink(it)
	delete(s.items, it.key)
	s.bytes -= it.bytes
	assert.That(s.bytes >= 0, "evict: shard bytes went negative")
	s.totals.addBytes(-it.bytes)
	s.totals.entries.Add(-1)
	s.checkAfterChange()
}

// checkAfterChange asserts the shard's structure after a change: the cheap
// relation always, the whole ring under the invariants build tag.
func (s *shard[E]) checkAfterChange() {
	assert.That((s.hand == nil) == (len(s.items) == 0), "evict: hand and map disagree on emptiness")
	assert.That((s.tail == nil) == (s.hand == nil), "evict: tail and hand disagree on emptiness")
	if invariantsEnabled {
		err := s.checkLocked()
		if err != nil {
			assert.Failf("evict: %v", err)
		}
	}
}
