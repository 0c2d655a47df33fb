package engine

import (
	"fmt"
	"sort"

	"ustore/internal/assert"
)

// extent is a byte range [start, start+length) on the device.
type extent struct{ start, length uint64 }

func (x extent) end() uint64 { return x.start + x.length }

// extentSet is a set of disjoint, non-adjacent extents in start order: the
// allocator's free space. Adjacent extents are always merged.
//
// It also sorts its extents by size: those of at least big bytes (a tree
// node fits) and the small ones, indexed by length, so that small data
// allocations can go into small holes and leave the big extents — the only
// ones a node fits in — to the tree (see allocator.reserveData).
type extentSet struct {
	xs     []extent
	sum    uint64                         // the extents' total length, kept as they change: total is asked on every buffered write
	big    uint64                         // extents of at least big bytes count as big; 0: all are
	bigSum uint64                         // the big extents' total length
	small  map[uint64]map[uint64]struct{} // length → starts of the small extents
}

// track and untrack keep sum, bigSum and small in step with xs.
func (s *extentSet) track(x extent) {
	s.sum += x.length
	if x.length >= s.big {
		s.bigSum += x.length
		return
	}
	if s.small == nil {
		s.small = map[uint64]map[uint64]struct{}{}
	}
	m := s.small[x.length]
	if m == nil {
		m = map[uint64]struct{}{}
		s.small[x.length] = m
	}
	m[x.start] = struct{}{}
}

func (s *extentSet) untrack(x extent) {
	s.sum -= x.length
	if x.length >= s.big {
		s.bigSum -= x.length
		return
	}
	delete(s.small[x.length], x.start)
}

// findSmall returns the start of a small extent of at least length bytes.
func (s *extentSet) findSmall(length uint64) (uint64, bool) {
	for l := length; l < s.big; l += SectorSize {
		for start := range s.small[l] {
			return start, true
		}
	}
	return 0, false
}

// add inserts [start, start+length), which must not overlap the set. The
// bytes added come back exactly: sum grows by length (paired with remove).
func (s *extentSet) add(start, length uint64) bool {
	if !(length > 0 && start+length > start) {
		assert.Failf("engine: free extent [%d, +%d) is empty or wraps", start, length)
	}
	before := s.sum
	ok := s.insert(start, length)
	if ok {
		s.assertSum(before, before+length)
	} else {
		s.assertSum(before, before)
	}
	return ok
}

// insert is add without the accounting checks.
func (s *extentSet) insert(start, length uint64) bool {
	i := sort.Search(len(s.xs), func(i int) bool { return s.xs[i].start >= start })
	if (i > 0 && s.xs[i-1].end() > start) || (i < len(s.xs) && start+length > s.xs[i].start) {
		return false // overlap: a double free
	}
	mergeLeft := i > 0 && s.xs[i-1].end() == start
	mergeRight := i < len(s.xs) && start+length == s.xs[i].start
	switch {
	case mergeLeft && mergeRight:
		s.untrack(s.xs[i-1])
		s.untrack(s.xs[i])
		s.xs[i-1].length += length + s.xs[i].length
		s.track(s.xs[i-1])
		s.xs = append(s.xs[:i], s.xs[i+1:]...)
	case mergeLeft:
		s.untrack(s.xs[i-1])
		s.xs[i-1].length += length
		s.track(s.xs[i-1])
	case mergeRight:
		s.untrack(s.xs[i])
		s.xs[i].start = start
		s.xs[i].length += length
		s.track(s.xs[i])
	default:
		s.xs = append(s.xs, extent{})
		copy(s.xs[i+1:], s.xs[i:])
		s.xs[i] = extent{start, length}
		s.track(s.xs[i])
	}
	return true
}

// remove takes [start, start+length) out; it must lie inside one extent.
// The bytes taken are exactly length (paired with add), and none of them
// is free afterwards.
func (s *extentSet) remove(start, length uint64) bool {
	if !(length > 0 && start+length > start) {
		assert.Failf("engine: extent [%d, +%d) to take is empty or wraps", start, length)
	}
	before := s.sum
	if !s.cut(start, length) {
		s.assertSum(before, before)
		return false
	}
	s.assertSum(before, before-length)
	if s.overlaps(start, length) {
		assert.Failf("engine: [%d, +%d) is still free after it was taken", start, length)
	}
	return true
}

// cut is remove without the accounting checks.
func (s *extentSet) cut(start, length uint64) bool {
	i := sort.Search(len(s.xs), func(i int) bool { return s.xs[i].end() > start })
	if i == len(s.xs) || s.xs[i].start > start || s.xs[i].end() < start+length {
		return false
	}
	x := s.xs[i]
	s.untrack(x)
	switch {
	case x.start == start && x.length == length:
		s.xs = append(s.xs[:i], s.xs[i+1:]...)
	case x.start == start:
		s.xs[i] = extent{start + length, x.length - length}
		s.track(s.xs[i])
	case x.end() == start+length:
		s.xs[i].length -= length
		s.track(s.xs[i])
	default:
		s.xs[i].length = start - x.start
		s.track(s.xs[i])
		s.xs = append(s.xs, extent{})
		copy(s.xs[i+2:], s.xs[i+1:])
		s.xs[i+1] = extent{start + length, x.end() - start - length}
		s.track(s.xs[i+1])
	}
	return true
}

// findFrom returns the first extent at or after cursor with room for
// length bytes, wrapping around once. The wrap ends back at the extent the
// cursor is in, taken whole: its part before the cursor counts too (with
// one free extent, the cursor near its end, it is the only room there is).
func (s *extentSet) findFrom(cursor, length uint64) (uint64, bool) {
	i := sort.Search(len(s.xs), func(i int) bool { return s.xs[i].end() > cursor })
	for n := 0; n <= len(s.xs); n++ {
		x := s.xs[(i+n)%len(s.xs)]
		start := x.start
		if n == 0 && start < cursor {
			start = cursor
		}
		if x.end() >= start+length {
			return start, true
		}
	}
	return 0, false
}

func (s *extentSet) total() uint64 { return s.sum }

// overlaps reports whether any byte of [start, start+length) is free: a
// binary search, cheap enough to assert on every allocation.
func (s *extentSet) overlaps(start, length uint64) bool {
	i := sort.Search(len(s.xs), func(i int) bool { return s.xs[i].end() > start })
	return i < len(s.xs) && s.xs[i].start < start+length
}

// assertSum checks the running totals after a change: sum moved by exactly
// the bytes added or taken, and the big extents are part of it.
func (s *extentSet) assertSum(before, want uint64) {
	if s.sum != want {
		assert.Failf("engine: free bytes %d after a change from %d, want %d", s.sum, before, want)
	}
	if s.bigSum > s.sum {
		assert.Failf("engine: %d free bytes in big extents, more than the %d free", s.bigSum, s.sum)
	}
}

// check walks the whole set (invariants build only, at commit points):
// extents sorted, non-empty, disjoint and never adjacent, inside [lo, hi),
// and sum, bigSum and the small index agree with them.
func (s *extentSet) check(lo, hi uint64) error {
	var sum, bigSum uint64
	smallCount := 0
	for i, x := range s.xs {
		if x.length == 0 || x.start < lo || x.end() > hi {
			return fmt.Errorf("engine: free extent %d [%d, %d) is empty or outside [%d, %d)", i, x.start, x.end(), lo, hi)
		}
		if i > 0 && s.xs[i-1].end() >= x.start {
			return fmt.Errorf("engine: free extents [%d, %d) and [%d, %d) overlap or touch", s.xs[i-1].start, s.xs[i-1].end(), x.start, x.end())
		}
		sum += x.length
		if x.length >= s.big {
			bigSum += x.length
			continue
		}
		if _, ok := s.small[x.length][x.start]; !ok {
			return fmt.Errorf("engine: small free extent [%d, %d) missing from the index", x.start, x.end())
		}
		smallCount++
	}
	indexed := 0
	for _, m := range s.small {
		indexed += len(m)
	}
	if sum != s.sum || bigSum != s.bigSum || indexed != smallCount {
		return fmt.Errorf("engine: free set totals %d/%d/%d, its extents %d/%d/%d (bytes/big bytes/small extents)",
			s.sum, s.bigSum, indexed, sum, bigSum, smallCount)
	}
	return nil
}
