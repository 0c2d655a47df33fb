package engine

import (
	"fmt"
	"sync"

	"ustore/internal/assert"
)

// allocator hands out device space. It keeps the free extents in memory
// (rebuilt at mount from the free space tree) with two cursors, one for
// metadata and one for data, so each kind stays clustered. A block freed in
// transaction T is pinned — not reusable — until T is durable: the newest
// durable superblock may still reach it. Every allocation and free is also
// recorded in T's delta, which T's commit applies to the free space tree.
type allocator struct {
	mu         sync.Mutex
	freeSet    extentSet
	metaCursor uint64
	dataCursor uint64
	pinned     map[Generation][]extent // freeing transaction → extents
	pinnedSum  uint64                  // their total length
	deltas     map[Generation]*allocDelta
	size       uint64 // device bytes
	// reserve is kept for deletes and commits: a full device can always
	// delete (CoW needs space) and commit (the free space tree changes).
	reserve uint64
}

// allocDelta is one transaction's changes to the allocation state.
type allocDelta struct {
	allocs, frees []extent
}

func newAllocator(size, nodeSize uint64) *allocator {
	return &allocator{
		freeSet:    extentSet{big: nodeSize},
		size:       size,
		metaCursor: firstAllocatable,
		dataCursor: firstAllocatable + (size-firstAllocatable)/8,
		reserve:    reserveFor(size),
		pinned:     map[Generation][]extent{},
		deltas:     map[Generation]*allocDelta{},
	}
}

func (a *allocator) delta(tid Generation) *allocDelta {
	d := a.deltas[tid]
	if d == nil {
		d = &allocDelta{}
		a.deltas[tid] = d
	}
	return d
}

func (a *allocator) allocMeta(tid Generation, length uint64, reserveOK bool) (Bytenr, error) {
	start, err := a.alloc(tid, length, &a.metaCursor, reserveOK)
	return Bytenr(start), err
}

// reserveData takes contiguous data space out of the free set without
// recording it in any transaction's delta (useData does that).
//
// Data must never take the room tree nodes need: a node fits only in a
// free extent of at least a node, and once CoW'd data has cut the free
// space into holes smaller than that, a commit cannot find a block for its
// nodes and the engine turns read-only (measured: random 4 KiB overwrites
// of a 1 GiB file on a 2 GiB device). So a data allocation smaller than a
// node goes into a small hole when one fits, and one from the big extents
// must leave the metadata reserve in them.
func (a *allocator) reserveData(length uint64) (uint64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	start, ok := a.freeSet.findSmall(length)
	if !ok {
		if a.freeSet.bigSum < length+a.reserve {
			return 0, fmt.Errorf("%w: %d bytes free in extents a node fits in, %d kept for deletes and commits",
				ErrNoSpace, a.freeSet.bigSum, a.reserve)
		}
		if start, ok = a.freeSet.findFrom(a.dataCursor, length); !ok {
			return 0, fmt.Errorf("%w: no free extent of %d bytes", ErrNoSpace, length)
		}
		// Cutting a big extent may leave a small remainder: what the
		// big extents lose can exceed length.
		taken := a.freeSet.remove(start, length)
		if !taken {
			assert.Failf("engine: data extent [%d, +%d) found but not taken", start, length)
		}
		if a.freeSet.bigSum < a.reserve {
			a.freeSet.add(start, length)
			return 0, fmt.Errorf("%w: %d bytes would be left in extents a node fits in, %d kept for deletes and commits",
				ErrNoSpace, a.freeSet.bigSum, a.reserve)
		}
		a.dataCursor = start + length
		a.assertTaken(start, length)
		return start, nil
	}
	taken := a.freeSet.remove(start, length)
	if !taken {
		assert.Failf("engine: small hole [%d, +%d) found but not taken", start, length)
	}
	a.assertTaken(start, length)
	return start, nil
}

// dataAvailable is how much data reserveData can still hand out: every
// small hole, and the big extents beyond the metadata reserve.
func (a *allocator) dataAvailable() uint64 {
	small := a.freeSet.sum - a.freeSet.bigSum
	if a.freeSet.bigSum > a.reserve {
		return small + a.freeSet.bigSum - a.reserve
	}
	return small
}

// useData records reserved data space as allocated by tid.
func (a *allocator) useData(tid Generation, start, length uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.assertTaken(start, length)
	d := a.delta(tid)
	d.allocs = append(d.allocs, extent{start, length})
}

// unreserveData returns reserved data space to the free set.
func (a *allocator) unreserveData(start, length uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.inDevice(start, length) {
		assert.Failf("engine: data [%d, +%d) returned outside the device", start, length)
	}
	if !a.freeSet.add(start, length) {
		return fmt.Errorf("%w: data [%d, +%d) returned twice", ErrCorruption, start, length)
	}
	return nil
}

func (a *allocator) alloc(tid Generation, length uint64, cursor *uint64, reserveOK bool) (uint64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !reserveOK && a.freeSet.bigSum < length+a.reserve {
		return 0, fmt.Errorf("%w: %d bytes free in extents a node fits in, %d kept for deletes and commits",
			ErrNoSpace, a.freeSet.bigSum, a.reserve)
	}
	start, ok := a.freeSet.findFrom(*cursor, length)
	if !ok {
		return 0, fmt.Errorf("%w: no free extent of %d bytes", ErrNoSpace, length)
	}
	taken := a.freeSet.remove(start, length)
	if !taken {
		assert.Failf("engine: node extent [%d, +%d) found but not taken", start, length)
	}
	a.assertTaken(start, length)
	*cursor = start + length
	d := a.delta(tid)
	d.allocs = append(d.allocs, extent{start, length})
	return start, nil
}

// free releases space in transaction tid; it stays pinned until tid is
// durable.
func (a *allocator) free(tid Generation, start, length uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pinned[tid] = append(a.pinned[tid], extent{start, length})
	a.pinnedSum += length
	d := a.delta(tid)
	d.frees = append(d.frees, extent{start, length})
}

// unpin makes the space freed by tid (now durable) allocatable. What it
// frees came from items read from disk, so an extent outside the device is
// corruption, refused here: the free set holds only device space (what
// assertTaken checks on every allocation).
func (a *allocator) unpin(tid Generation) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, x := range a.pinned[tid] {
		if a.pinnedSum < x.length {
			assert.Failf("engine: %d bytes pinned, fewer than the extent [%d, +%d) of transaction %d", a.pinnedSum, x.start, x.length, tid)
		}
		a.pinnedSum -= x.length
		if !a.inDevice(x.start, x.length) {
			return fmt.Errorf("%w: freed [%d, +%d) outside the device's [%d, %d)", ErrCorruption, x.start, x.length, uint64(firstAllocatable), a.size)
		}
		if !a.freeSet.add(x.start, x.length) {
			return fmt.Errorf("%w: block %d freed twice", ErrCorruption, x.start)
		}
	}
	delete(a.pinned, tid)
	if invariantsOn {
		err := a.freeSet.check(firstAllocatable, a.size)
		if err != nil {
			assert.Failf("engine: after unpinning transaction %d: %v", tid, err)
		}
	}
	return nil
}

// takeDelta removes and returns tid's delta (nil when empty).
func (a *allocator) takeDelta(tid Generation) *allocDelta {
	a.mu.Lock()
	defer a.mu.Unlock()
	d := a.deltas[tid]
	delete(a.deltas, tid)
	if invariantsOn {
		err := a.freeSet.check(firstAllocatable, a.size)
		if err != nil {
			assert.Failf("engine: at the commit of transaction %d: %v", tid, err)
		}
	}
	if d != nil && len(d.allocs) == 0 && len(d.frees) == 0 {
		return nil
	}
	return d
}

// freeBytes is the space allocatable now (pinned space excluded).
func (a *allocator) freeBytes() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.assertTotals()
	return a.freeSet.total()
}

// assertTotals checks the running totals where they are read (Space,
// freeBytes); extentSet.assertSum checks them where they change. The free
// extents are disjoint and inside the device, so they cannot add up to
// more than it. a.mu is held.
func (a *allocator) assertTotals() {
	if !(a.freeSet.bigSum <= a.freeSet.sum && a.freeSet.sum <= a.size-firstAllocatable) {
		assert.Failf("engine: %d bytes free (%d in big extents) on a device of %d allocatable bytes",
			a.freeSet.sum, a.freeSet.bigSum, a.size-firstAllocatable)
	}
}

// allocLog takes a block for a log tree node out of the free set, without a
// delta: log blocks never reach the free space tree.
func (a *allocator) allocLog(length uint64, reserveOK bool) (Bytenr, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !reserveOK && a.freeSet.bigSum < length+a.reserve {
		return 0, fmt.Errorf("%w: %d bytes free in extents a node fits in, %d kept for deletes and commits",
			ErrNoSpace, a.freeSet.bigSum, a.reserve)
	}
	start, ok := a.freeSet.findFrom(a.metaCursor, length)
	if !ok {
		return 0, fmt.Errorf("%w: no free extent of %d bytes", ErrNoSpace, length)
	}
	taken := a.freeSet.remove(start, length)
	if !taken {
		assert.Failf("engine: log extent [%d, +%d) found but not taken", start, length)
	}
	a.assertTaken(start, length)
	a.metaCursor = start + length
	return Bytenr(start), nil
}

// release returns space taken without a delta (log blocks) to the free set.
func (a *allocator) release(start, length uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.inDevice(start, length) {
		assert.Failf("engine: log block [%d, +%d) released outside the device", start, length)
	}
	if !a.freeSet.add(start, length) {
		return fmt.Errorf("%w: log block %d released twice", ErrCorruption, start)
	}
	return nil
}

// claim takes exactly [start, start+length) out of the free set: replay's
// way to protect what a log references. It fails unless all of it is free
// (start and length come from a log read from disk).
func (a *allocator) claim(start, length uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.inDevice(start, length) || !a.freeSet.remove(start, length) {
		return fmt.Errorf("%w: [%d, +%d) is not free", ErrCorruption, start, length)
	}
	a.assertTaken(start, length)
	return nil
}

// inDevice reports whether [start, start+length) is non-empty, does not
// wrap, and lies in the allocatable part of the device.
func (a *allocator) inDevice(start, length uint64) bool {
	return length > 0 && start >= firstAllocatable && start+length > start && start+length <= a.size
}

// assertTaken checks an extent the allocator hands out or records as used:
// inside the device, and no byte of it free. Its pair is the check on the
// way in (loadFreeSpace and unpin refuse extents outside the device;
// extentSet.add refuses overlaps), and applyDelta checks the same of every
// allocation the free space tree takes. a.mu is held.
func (a *allocator) assertTaken(start, length uint64) {
	if !a.inDevice(start, length) {
		assert.Failf("engine: extent [%d, +%d) outside the device's [%d, %d)", start, length, uint64(firstAllocatable), a.size)
	}
	if a.freeSet.overlaps(start, length) {
		assert.Failf("engine: extent [%d, +%d) taken but still free", start, length)
	}
}
