package store

import (
	"fmt"
	"slices"

	"ustore/engine"
)

// Data checksums: EXTENT_CSUM items (CsumObjectID, bytenr) hold a crc32c
// per block from bytenr on. Writeback inserts one item per extent;
// freeing blocks deletes their checksums, splitting items that straddle
// the freed range.

type csumItem struct {
	start uint64
	sums  []byte
}

func (c csumItem) end() uint64 { return c.start + uint64(len(c.sums)/engine.CsumSize)*blockSize }

// slice returns the checksums of the blocks [start, end), within c.
func (c csumItem) slice(start, end uint64) []byte {
	return c.sums[(start-c.start)/blockSize*engine.CsumSize : (end-c.start)/blockSize*engine.CsumSize]
}

// eachCsum calls fn for each csum item overlapping [start, end), in
// order, while fn returns true; c.sums is the leaf's own payload, valid
// only during the call. One descent: the item below start (which may
// cover it), then those from start on.
func (s *Store) eachCsum(start, end uint64, fn func(c csumItem) bool) error {
	from := csumKey(start)
	return s.csum.IterateFromFloor(from, func(k engine.Key, b []byte) bool {
		if k.ObjectID != engine.CsumObjectID || k.Type != engine.TypeExtentCsum {
			return k.Less(from) // another kind below the range: go on; above it: done
		}
		if k.Offset >= end {
			return false
		}
		if c := (csumItem{k.Offset, b}); c.end() > start {
			return fn(c)
		}
		return true
	})
}

// csumsIn returns the csum items overlapping [start, end), payloads copied.
func (s *Store) csumsIn(start, end uint64) ([]csumItem, error) {
	var out []csumItem
	err := s.eachCsum(start, end, func(c csumItem) bool {
		out = append(out, csumItem{c.start, slices.Clone(c.sums)})
		return true
	})
	return out, err
}

// csumCut is a csum item that freeing a range cuts: where it starts, and
// a copy of its checksums past the range, which a new item keeps (nil if
// none) — only those are copied out of the leaf.
type csumCut struct {
	start uint64
	right []byte
}

// deleteCsums deletes the checksums of [start, start+length).
func (s *Store) deleteCsums(tr *engine.Trans, start, length uint64) error {
	end := start + length
	var cuts []csumCut
	err := s.eachCsum(start, end, func(c csumItem) bool {
		cut := csumCut{start: c.start}
		if c.end() > end {
			cut.right = slices.Clone(c.slice(end, c.end()))
		}
		cuts = append(cuts, cut)
		return true
	})
	if err != nil {
		return err
	}
	for _, c := range cuts {
		key := csumKey(c.start)
		if c.start < start {
			if err := s.csum.TruncateItem(tr, key, int((start-c.start)/blockSize)*engine.CsumSize); err != nil {
				return err
			}
		} else if err := s.csum.DeleteItem(tr, key); err != nil {
			return err
		}
		if c.right != nil {
			if err := s.csum.InsertItem(tr, csumKey(end), c.right); err != nil {
				return err
			}
		}
	}
	return nil
}

// lookupCsums returns the checksums of the n blocks from start; a block
// without one is corruption.
func (s *Store) lookupCsums(start uint64, n int) ([]uint32, error) {
	end := start + uint64(n)*blockSize
	cs, err := s.csumsIn(start, end)
	if err != nil {
		return nil, err
	}
	out := make([]uint32, n)
	have := 0
	for _, c := range cs {
		for b := max(c.start, start); b < min(c.end(), end); b += blockSize {
			out[(b-start)/blockSize] = engine.GetCsum(c.sums, int((b-c.start)/blockSize))
			have++
		}
	}
	if have != n {
		return nil, fmt.Errorf("%w: %d of %d data blocks from %d have no checksum", engine.ErrCorruption, n-have, n, start)
	}
	return out, nil
}
