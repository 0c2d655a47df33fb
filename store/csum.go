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

// csumsIn returns the csum items overlapping [start, end), payloads copied.
func (s *Store) csumsIn(start, end uint64) ([]csumItem, error) {
	var out []csumItem
	isCsum := func(k engine.Key) bool {
		return k.ObjectID == engine.CsumObjectID && k.Type == engine.TypeExtentCsum
	}
	// One descent: the item below start (which may cover it), then those
	// from start on.
	from := csumKey(start)
	err := s.csum.IterateFromFloor(from, func(k engine.Key, b []byte) bool {
		if !isCsum(k) {
			return k.Less(from) // another kind below the range: go on; above it: done
		}
		if k.Offset >= end {
			return false
		}
		out = append(out, csumItem{k.Offset, slices.Clone(b)})
		return true
	})
	out = slices.DeleteFunc(out, func(c csumItem) bool { return c.end() <= start })
	return out, err
}

// deleteCsums deletes the checksums of [start, start+length).
func (s *Store) deleteCsums(tr *engine.Trans, start, length uint64) error {
	end := start + length
	cs, err := s.csumsIn(start, end)
	if err != nil {
		return err
	}
	for _, c := range cs {
		key := csumKey(c.start)
		cutS, cutE := max(c.start, start), min(c.end(), end)
		if c.start < cutS {
			if err := s.csum.TruncateItem(tr, key, int((cutS-c.start)/blockSize)*engine.CsumSize); err != nil {
				return err
			}
		} else if err := s.csum.DeleteItem(tr, key); err != nil {
			return err
		}
		if c.end() > cutE {
			if err := s.csum.InsertItem(tr, csumKey(cutE), c.slice(cutE, c.end())); err != nil {
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
