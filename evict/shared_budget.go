package evict

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Budget is one memory budget shared by several caches: each cache's
// entries count against the same total, and an eviction pass started by
// any of them sweeps the shards of all of them (budget.go), with the same
// SIEVE policy. ustore's tree-node cache and its file-data page cache share
// one, so that --cache-size bounds both together and the pages that are
// used — node or data — are the ones that stay.
//
// A Budget is made by NewBudget and given to New in Options.Budget; a
// cache made without one gets a budget of its own. Caches join a budget
// when made and never leave it (a store's caches live as long as it does).
type Budget struct {
	budgetBytes int64
	// bytes is the sum of the member caches' charged bytes; each change is
	// made under the changing shard's write lock (totals.addBytes).
	bytes atomic.Int64
	// floorBytes is the pinned floor (budget.go): the bytes the last
	// eviction pass that gave up could not evict, or 0.
	floorBytes atomic.Int64
	// nextShard picks where an eviction pass starts among the members'
	// shards, so that passes spread their work round robin.
	nextShard atomic.Uint64

	// joinMu serialises joins; members is replaced whole by each join, so
	// an eviction pass reads it without a lock.
	joinMu  sync.Mutex
	members atomic.Pointer[[]member]

	// pickMu guards credit, the smooth weighted round robin's state
	// (pickMember), one entry per member in members' order.
	pickMu sync.Mutex
	credit []int64
}

// member is a cache as its budget sees it: shards it can sweep.
type member interface {
	shardCount() int
	// nextShardOf returns the member's shard to sweep next, round robin.
	nextShardOf() int
	// bytesHeld is the member's charged bytes now.
	bytesHeld() int64
	// evictShardOf sweeps shard i until the budget is met or the hand has
	// gone round twice, and returns how many entries it evicted.
	evictShardOf(i int) int
}

// NewBudget returns a budget of budgetBytes, which must be positive (it
// panics otherwise, like New: check a flag's value with Options.Validate).
func NewBudget(budgetBytes int64) *Budget {
	if budgetBytes <= 0 {
		panic(fmt.Errorf("%w: BudgetBytes %d is not positive", ErrOptions, budgetBytes))
	}
	b := &Budget{budgetBytes: budgetBytes}
	b.members.Store(new([]member))
	return b
}

// BudgetBytes returns the budget.
func (b *Budget) BudgetBytes() int64 { return b.budgetBytes }

// Bytes returns the sum of the charged bytes of every cache sharing the
// budget.
func (b *Budget) Bytes() int64 { return b.bytes.Load() }

// Members returns how many caches share the budget.
func (b *Budget) Members() int { return len(b.memberList()) }

func (b *Budget) memberList() []member { return *b.members.Load() }

// join adds m to the budget's members.
func (b *Budget) join(m member) {
	b.joinMu.Lock()
	defer b.joinMu.Unlock()
	old := b.memberList()
	ms := make([]member, len(old), len(old)+1)
	copy(ms, old)
	ms = append(ms, m)
	b.members.Store(&ms)
}

// memberShard maps g, an index over all the members' shards in member
// order, to its member and the shard's index in it.
func memberShard(ms []member, g int) (member, int) {
	for _, m := range ms {
		n := m.shardCount()
		if g < n {
			return m, g
		}
		g -= n
	}
	panic("evict: shard index past the budget's members")
}

// shardTotal returns how many shards the members have in all.
func (b *Budget) shardTotal(ms []member) int {
	n := 0
	for _, m := range ms {
		n += m.shardCount()
	}
	return n
}

// pickMember picks the member whose shard an eviction step sweeps next, in
// proportion to the bytes each holds, by smooth weighted round robin: each
// member's credit grows by its bytes, the one with the most is picked and
// its credit lowered by the total. Over a run of picks each member is
// swept as often as its share of the bytes, so that every entry, node or
// page, meets a hand about equally often — as under one hand over
// all entries. A member that holds nothing is never picked.
func (b *Budget) pickMember(ms []member) member {
	b.pickMu.Lock()
	defer b.pickMu.Unlock()
	for len(b.credit) < len(ms) {
		b.credit = append(b.credit, 0)
	}
	best, total := 0, int64(0)
	for i, m := range ms {
		w := m.bytesHeld()
		total += w
		b.credit[i] += w
		if b.credit[i] > b.credit[best] {
			best = i
		}
	}
	b.credit[best] -= total
	return ms[best]
}
