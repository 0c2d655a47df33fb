package engine

import (
	"fmt"

	"github.com/google/btree"

	"ustore/internal/assert"
)

// extent is a byte range [start, start+length) on the device.
type extent struct{ start, length uint64 }

func (x extent) end() uint64 { return x.start + x.length }

// extentSet is a set of disjoint, non-adjacent extents in start order: the
// allocator's free space. Adjacent extents are always merged.
//
// The extents are kept in a B-tree by start, not a sorted slice: random
// overwrites leave the free space in as many holes as blocks they freed,
// and with a slice every hole taken or given back was a copy of half the
// set (69 µs at 100,000 holes; BenchmarkExtentSet_Fragmented). The zero
// value is an empty set.
//
// It also sorts its extents by size: those of at least big bytes (a tree
// node fits) and the small ones, indexed by length, so that small data
// allocations can go into small holes and leave the big extents — the only
// ones a node fits in — to the tree (see allocator.reserveData).
type extentSet struct {
	xs     *btree.BTreeG[extent]          // by start; nil until the first add
	sum    uint64                         // the extents' total length, kept as they change: total is asked on every buffered write
	big    uint64                         // extents of at least big bytes count as big; 0: all are
	bigSum uint64                         // the big extents' total length
	small  map[uint64]map[uint64]struct{} // length → starts of the small extents
}

// extentDegree is the B-tree's degree: nodes of up to 63 extents (1 KiB).
const extentDegree = 32

func byStart(a, b extent) bool { return a.start < b.start }

// tree returns the B-tree, making it on first use.
func (s *extentSet) tree() *btree.BTreeG[extent] {
	if s.xs == nil {
		s.xs = btree.NewG(extentDegree, byStart)
	}
	return s.xs
}

// len is the number of extents.
func (s *extentSet) len() int {
	if s.xs == nil {
		return 0
	}
	return s.xs.Len()
}

// floor returns the extent with the greatest start at or below at.
func (s *extentSet) floor(at uint64) (x extent, ok bool) {
	s.tree().DescendLessOrEqual(extent{start: at}, func(e extent) bool {
		x, ok = e, true
		return false
	})
	return x, ok
}

// ceil returns the extent with the least start at or above at.
func (s *extentSet) ceil(at uint64) (x extent, ok bool) {
	s.tree().AscendGreaterOrEqual(extent{start: at}, func(e extent) bool {
		x, ok = e, true
		return false
	})
	return x, ok
}

// containing returns the first extent that ends after at: the one at
// holds, else the next above it.
func (s *extentSet) containing(at uint64) (extent, bool) {
	if x, ok := s.floor(at); ok && x.end() > at {
		return x, true
	}
	return s.ceil(at)
}

// each calls fn for each extent in start order while fn returns true.
func (s *extentSet) each(fn func(x extent) bool) { s.tree().Ascend(fn) }

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
	prev, hasPrev := s.floor(start)
	next, hasNext := s.ceil(start)
	if (hasPrev && prev.end() > start) || (hasNext && start+length > next.start) {
		return false // overlap: a double free
	}
	mergeLeft := hasPrev && prev.end() == start
	mergeRight := hasNext && start+length == next.start
	t := s.tree()
	switch {
	case mergeLeft && mergeRight:
		s.untrack(prev)
		s.untrack(next)
		t.Delete(next)
		prev.length += length + next.length
		t.ReplaceOrInsert(prev)
		s.track(prev)
	case mergeLeft:
		s.untrack(prev)
		prev.length += length
		t.ReplaceOrInsert(prev)
		s.track(prev)
	case mergeRight:
		s.untrack(next)
		t.Delete(next)
		x := extent{start, length + next.length}
		t.ReplaceOrInsert(x)
		s.track(x)
	default:
		x := extent{start, length}
		t.ReplaceOrInsert(x)
		s.track(x)
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
	x, ok := s.floor(start)
	if !ok || x.end() < start+length {
		return false
	}
	t := s.tree()
	s.untrack(x)
	switch {
	case x.start == start && x.length == length:
		t.Delete(x)
	case x.start == start:
		t.Delete(x)
		right := extent{start + length, x.length - length}
		t.ReplaceOrInsert(right)
		s.track(right)
	case x.end() == start+length:
		x.length -= length
		t.ReplaceOrInsert(x)
		s.track(x)
	default:
		right := extent{start + length, x.end() - start - length}
		x.length = start - x.start
		t.ReplaceOrInsert(x)
		t.ReplaceOrInsert(right)
		s.track(x)
		s.track(right)
	}
	return true
}

// findFrom returns the first extent at or after cursor with room for
// length bytes, wrapping around once. The wrap ends back at the extent the
// cursor is in, taken whole: its part before the cursor counts too (with
// one free extent, the cursor near its end, it is the only room there is).
func (s *extentSet) findFrom(cursor, length uint64) (found uint64, ok bool) {
	first, hasFirst := s.containing(cursor)
	if hasFirst {
		s.tree().AscendGreaterOrEqual(first, func(x extent) bool {
			start := x.start
			if start < cursor {
				start = cursor // only the first can start before the cursor
			}
			if x.end() >= start+length {
				found, ok = start, true
			}
			return !ok
		})
		if ok {
			return found, true
		}
	}
	// The wrap: from the lowest extent up to the first one, whole.
	s.each(func(x extent) bool {
		if x.length >= length {
			found, ok = x.start, true
		}
		return !ok && (!hasFirst || x.start < first.start)
	})
	return found, ok
}

func (s *extentSet) total() uint64 { return s.sum }

// overlaps reports whether any byte of [start, start+length) is free: a
// search of the tree, cheap enough to assert on every allocation.
func (s *extentSet) overlaps(start, length uint64) bool {
	x, ok := s.containing(start)
	return ok && x.start < start+length
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
	var err error
	var prev extent
	i := 0
	s.each(func(x extent) bool {
		switch {
		case x.length == 0 || x.start < lo || x.end() > hi:
			err = fmt.Errorf("engine: free extent %d [%d, %d) is empty or outside [%d, %d)", i, x.start, x.end(), lo, hi)
		case i > 0 && prev.end() >= x.start:
			err = fmt.Errorf("engine: free extents [%d, %d) and [%d, %d) overlap or touch", prev.start, prev.end(), x.start, x.end())
		}
		if err != nil {
			return false
		}
		prev = x
		i++
		sum += x.length
		if x.length >= s.big {
			bigSum += x.length
			return true
		}
		if _, ok := s.small[x.length][x.start]; !ok {
			err = fmt.Errorf("engine: small free extent [%d, %d) missing from the index", x.start, x.end())
			return false
		}
		smallCount++
		return true
	})
	if err != nil {
		return err
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
