package engine

// maxLevel bounds tree height: a 4 KiB-node tree of height 8 holds more
// items than any device has blocks, so a deeper node is corruption, and
// every loop over levels is bounded by it.
const maxLevel = 8

// reserveFor is the metadata reserve of a device: 1/64 of it, at least
// 256 KiB, at most 64 MiB — room for the CoW of a few hundred paths.
func reserveFor(size uint64) uint64 {
	return min(max(size/64, 256<<10), 64<<20)
}
