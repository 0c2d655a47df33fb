package evict

import "sync/atomic"

// Entry is what the cache holds: a B-tree node keyed by its bytenr, a
// clean data block, an in-memory inode keyed by its number — each knows
// its size and whether it may be dropped.
//
// Both methods are called with a shard's lock held: they must be cheap
// (an atomic load, a field read) and must not call into the Cache.
type Entry interface {
	// CacheBytes is the memory charged for the entry, at least zero. It is
	// read once, when the entry is added, and that charge stays until the
	// entry leaves; to re-charge an entry whose size changed, Add it again.
	CacheBytes() int64
	// Pinned reports that the entry must not be evicted now (a dirty node of
	// a transaction not yet committed). It is read each time the hand
	// or Clear reaches the entry, so an entry may be pinned when added and
	// unpinned later. Pinning an entry that is already cached races with a
	// hand that is reading Pinned at that moment; see doc.go.
	Pinned() bool
}

// item is one cached entry and its place in its shard's ring.
//
// key, entry, bytes, prev and next change only under the shard's write
// lock; the read lock is enough to read them. ref is the one field a reader
// writes: hits set it under the read lock, so it is atomic; the hand clears
// it under the write lock.
type item[E Entry] struct {
	key   uint64
	entry E
	// bytes is what the shard's and the cache's totals were charged for
	// this item: entry.CacheBytes() when it was added.
	bytes int64
	// ref is the reference bit (SIEVE's visited bit): set by a hit, cleared by the hand,
	// which evicts only items whose bit is already clear.
	ref atomic.Bool
	// prev and next link the shard's ring; the hand moves along next.
	prev, next *item[E]
}

// keyEntry is an entry and its key, copied out of a shard so that a
// callback (OnEvict, Range's fn) can run after the shard's lock is released.
type keyEntry[E Entry] struct {
	key   uint64
	entry E
}
