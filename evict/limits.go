package evict

// Bounds of the cache, each with its reason.
const (
	// shardsMax bounds Options.Shards. Past 256 shards two goroutines almost
	// never want the same shard's lock, while each shard still costs a map,
	// a mutex and padding, and an eviction pass that gives up visits them
	// all.
	shardsMax = 256
	// shardsPerProc: the default shard count is the power of two at or
	// above shardsPerProc×GOMAXPROCS (capped at shardsMax), so that running
	// goroutines rarely meet on one shard's lock.
	shardsPerProc = 4
	// sweepsMax bounds the revolutions of a shard's hand in one
	// eviction pass. The first revolution clears reference bits, the second
	// evicts every clean entry that was not referenced again meanwhile; a
	// third would only go round the pinned entries once more.
	sweepsMax = 2
	// victimsInline is how many evicted entries one shard's sweep keeps on
	// the stack for OnEvict before it spills to the heap: a steady-state
	// Add evicts about one.
	victimsInline = 8
)

// Compile-time checks of the relations the code relies on.
const (
	// shardsMax is a power of two: the default count, rounded up to a power
	// of two and capped at shardsMax, stays one, and the shard index is
	// the top log2(shards) bits of a hash.
	_ = uint(0 - shardsMax&(shardsMax-1))
	// An eviction pass must at least look at every entry once.
	_ = uint(sweepsMax - 1)
)
