package engine

import "sort"

// extent is a byte range [start, start+length) on the device.
type extent struct{ start, length uint64 }

func (x extent) end() uint64 { return x.start + x.length }

// extentSet is a set of disjoint, non-adjacent extents in start order: the
// allocator's free space. Adjacent extents are always merged.
type extentSet struct {
	xs  []extent
	sum uint64 // the extents' total length, kept as they change: total is asked on every buffered write
}

// add inserts [start, start+length), which must not overlap the set.
func (s *extentSet) add(start, length uint64) bool {
	i := sort.Search(len(s.xs), func(i int) bool { return s.xs[i].start >= start })
	if (i > 0 && s.xs[i-1].end() > start) || (i < len(s.xs) && start+length > s.xs[i].start) {
		return false // overlap: a double free
	}
	s.sum += length
	mergeLeft := i > 0 && s.xs[i-1].end() == start
	mergeRight := i < len(s.xs) && start+length == s.xs[i].start
	switch {
	case mergeLeft && mergeRight:
		s.xs[i-1].length += length + s.xs[i].length
		s.xs = append(s.xs[:i], s.xs[i+1:]...)
	case mergeLeft:
		s.xs[i-1].length += length
	case mergeRight:
		s.xs[i].start = start
		s.xs[i].length += length
	default:
		s.xs = append(s.xs, extent{})
		copy(s.xs[i+1:], s.xs[i:])
		s.xs[i] = extent{start, length}
	}
	return true
}

// remove takes [start, start+length) out; it must lie inside one extent.
func (s *extentSet) remove(start, length uint64) bool {
	i := sort.Search(len(s.xs), func(i int) bool { return s.xs[i].end() > start })
	if i == len(s.xs) || s.xs[i].start > start || s.xs[i].end() < start+length {
		return false
	}
	x := s.xs[i]
	s.sum -= length
	switch {
	case x.start == start && x.length == length:
		s.xs = append(s.xs[:i], s.xs[i+1:]...)
	case x.start == start:
		s.xs[i] = extent{start + length, x.length - length}
	case x.end() == start+length:
		s.xs[i].length -= length
	default:
		s.xs[i].length = start - x.start
		s.xs = append(s.xs, extent{})
		copy(s.xs[i+2:], s.xs[i+1:])
		s.xs[i+1] = extent{start + length, x.end() - start - length}
	}
	return true
}

// findFrom returns the first extent at or after cursor with room for
// length bytes, wrapping around once.
func (s *extentSet) findFrom(cursor, length uint64) (uint64, bool) {
	i := sort.Search(len(s.xs), func(i int) bool { return s.xs[i].end() > cursor })
	for n := 0; n < len(s.xs); n++ {
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
