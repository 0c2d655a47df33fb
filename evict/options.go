package evict

import (
	"fmt"
	"runtime"
)

// Options configure a Cache. The zero value is not usable: BudgetBytes must
// be set.
type Options struct {
	// BudgetBytes is the soft memory budget, compared with the sum of the
	// entries' CacheBytes. After an Add (or a GetOrLoad that inserts),
	// clean entries are evicted until the total is at most BudgetBytes or
	// only pinned entries remain; see doc.go for the exact bound and for
	// the pinned floor that keeps an over-pinned cache from rescanning on
	// every Add.
	BudgetBytes int64
	// Budget, when set, is a budget shared with other caches
	// (shared_budget.go): the cache's entries count against it and its
	// eviction passes sweep all of them. BudgetBytes must then be 0.
	Budget *Budget
	// Shards is the number of independently locked parts of the cache, a
	// power of two in 1..256. Zero means the power of two at or above
	// 4×GOMAXPROCS, at most 256.
	Shards int
	// NeverPinned promises that no entry's Pinned ever returns true (the
	// store's clean data pages): Clear then drops each shard's map and
	// ring whole without walking them — O(shards), not O(entries) — when
	// OnEvict is not set. Add asserts the promise.
	NeverPinned bool
	// OnEvict, when set, is called for every entry the cache drops on its
	// own (the hand's eviction, Clear), after the shard's lock is released: it
	// may call back into the Cache. It is not called for Remove, nor for
	// the old entry of an Add that replaces one (the caller knows of
	// those). By the time it runs the key may already be cached again.
	OnEvict func(key uint64, e Entry)
	// TryEvict, when set, is asked by the hand and by Clear, under the
	// shard's write lock, about each unpinned entry they are about to
	// drop: false keeps it (counted as a pinned skip), true drops it at
	// once, under the same lock. It is for an owner that indexes the
	// entries itself and must let go of one atomically with its leaving
	// the cache — the store's inode table, whose inodes can be taken
	// again at any moment: it removes the inode from its own map here,
	// under its own locks, which OnEvict, after the fact, could not do
	// without dropping an inode referenced again meanwhile. It must not
	// block (it may only try locks: the shard's lock is held) and must
	// not call into the Cache. A cache with TryEvict cannot be
	// NeverPinned.
	TryEvict func(key uint64, e Entry) bool
}

// Validate reports whether New would accept the options, so that a
// configuration from a flag (--cache-size) is refused with an error rather
// than a panic. The error matches ErrOptions.
func (o Options) Validate() error {
	if o.Budget != nil {
		if o.BudgetBytes != 0 {
			return fmt.Errorf("%w: both BudgetBytes %d and a shared Budget", ErrOptions, o.BudgetBytes)
		}
	} else if o.BudgetBytes <= 0 {
		return fmt.Errorf("%w: BudgetBytes %d is not positive", ErrOptions, o.BudgetBytes)
	}
	if o.TryEvict != nil && o.NeverPinned {
		return fmt.Errorf("%w: TryEvict may keep entries, which NeverPinned promises never happens", ErrOptions)
	}
	if o.Shards < 0 || o.Shards > shardsMax || o.Shards&(o.Shards-1) != 0 {
		return fmt.Errorf("%w: Shards %d is not 0 or a power of two up to %d", ErrOptions, o.Shards, shardsMax)
	}
	return nil
}

// shardCount returns the number of shards the options ask for, resolving
// the default.
func (o Options) shardCount() int {
	if o.Shards != 0 {
		return o.Shards
	}
	want := shardsPerProc * runtime.GOMAXPROCS(0)
	n := 1
	for n < want && n < shardsMax {
		n <<= 1
	}
	return n
}
