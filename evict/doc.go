// Package evict is ustore's memory-bounded cache: B-tree nodes keyed by
// their bytenr, clean file-data blocks (the store's page cache) and the
// store's in-memory inodes, under one budget (--cache-size) that several
// caches share (Budget, shared_budget.go): every member's entries count against its total, and
// an eviction pass sweeps the shards of all of them, round robin, with one
// SIEVE policy (clock.go: CLOCK with new entries at the head). Each entry reports its size and whether it is pinned —
// the dirty nodes of a transaction not yet committed are, and are never
// evicted; clean ones are evicted by SIEVE when the cache is over budget.
// Teardown (Clear) is linear, in bulk, as the 2013 btrfs patch "fix very
// slow inode eviction and fs unmount" taught (98 s to 1.8 s at unmount).
//
//	key ──hash──► shard[top bits]        (Options.Shards, a power of two)
//	              ┌──────────────────────────────────────────────┐
//	              │ RWMutex                                      │
//	              │ items   map[key]*item ───┐                   │
//	              │ ring    ► [a] ► [b] ► [c] ► (back to a)      │
//	              │          hand ▲   ref bits: set by hits,     │
//	              │                   cleared by the hand        │
//	              │ loading map[key]*call    (one load per key)  │
//	              └──────────────────────────────────────────────┘
//	totals: bytes, entries (atomic, cache-wide)  ◄── the budget applies here
//
// Get takes the shard's read lock and sets the entry's reference bit with
// an atomic store. Add inserts (or replaces) under the write lock, then, if
// the total is over the budget, runs an eviction pass (budget.go): in its
// own shard first, then in the others round robin, one shard lock at a time,
// each hand going at most twice round its ring. GetOrLoad lets one caller
// per key run the load while the others wait for its result.
//
// Pinning. Pinned is read when the hand reaches an entry, so entries may
// change from pinned to unpinned at any time (a commit makes its dirty
// nodes clean; call Shrink afterwards). Pinning an entry that is already
// cached races with a hand that read Pinned a moment earlier, and the entry
// may then be evicted; the B-tree never needs it — a dirty node is a new
// node, added pinned — and a caller that does can Add the entry again.
//
// # Invariants
//
//  1. Every cached item is in its key's shard, in that shard's map and once
//     in its ring, and nowhere else; the hand is nil iff the shard is
//     empty. (Asserted after every change, the whole ring under the
//     invariants build tag: shard.checkAfterChange; Check; clearLocked
//     asserts the ring's length while it walks it.)
//  2. Byte counts are exact: a shard's bytes are the sum of its items'
//     charges (CacheBytes, read once when added), the cache's total is the
//     sum over its shards, a Budget's total is the sum over its member
//     caches, and none is ever negative. The totals change
//     under the shard's write lock. (Asserted in dropLocked and
//     clearLocked; Check; the stress test compares Bytes with the sum of
//     its entries; TestBudget_Add_SharedAccounting the budget's with both
//     caches'.)
//  3. An entry that reports Pinned when the hand or Clear reaches it stays
//     cached: both read Pinned under the shard's write lock, the only lock
//     under which an entry leaves the cache other than by Remove and
//     DropAll. So does an unpinned one that Options.TryEvict declines, and
//     one it accepts leaves under that same lock, with nothing in
//     between. (TestCache_Add_PinnedNeverEvicted; the stress test's
//     OnEvict; TestCache_TryEvict_DeclinedStays.)
//  4. The memory bound. With no concurrent calls, after an Add, GetOrLoad
//     or Shrink returns, Bytes ≤ max(BudgetBytes + floor, pinned bytes +
//     the entry just added), where the pinned floor is at most the bytes
//     pinned when a pass last gave up: within BudgetBytes + pinned bytes +
//     one entry while nothing is unpinned without a Shrink. Each concurrent
//     Add may add one entry in flight. (TestCache_Add_BoundHolds, the
//     stress test.)
//  5. Work is bounded. An eviction pass makes at most one sweep per shard
//     of its budget's caches (two when several caches share the budget:
//     the weighted steps, then one round robin), each moving the hand at
//     most sweepsMax × (its items) steps, so an all-pinned cache ends the
//     pass over budget, counting PinnedSkips; after such a pass the pinned
//     floor defers the next one until BudgetBytes more bytes are added.
//     Clear is linear in the entries, and constant per shard in a
//     NeverPinned cache without OnEvict; DropAll is constant per shard
//     always. No recursion, and every slice is
//     bounded by a shard's size (Range's copy, a sweep's victims, Clear's
//     kept items). (TestCache_Add_AllPinnedEnds counts the hand's steps
//     exactly; TestCache_Add_PinnedFloorAmortizes;
//     TestCache_Clear_NeverPinnedDropsWhole; TestCache_DropAll_Whole.)
//  6. No lock is held while OnEvict or a load runs, and no goroutine holds
//     two shard locks, except Check (read locks, in index order). TryEvict
//     runs under a shard's write lock and only tries its owner's locks, so
//     it cannot deadlock with a caller that holds them while it waits for
//     the shard. (Tests call back into the cache from OnEvict and from
//     load.)
//  7. At most one load per key is in flight; every goroutine that waits on
//     it gets its result; a load that fails or panics caches nothing.
//     (Asserted in finishLoad: the finishing call is the key's call;
//     TestCache_GetOrLoad_*.)
package evict
