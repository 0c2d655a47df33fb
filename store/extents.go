package store

import (
	"slices"

	"ustore/engine"
)

// An inode's extent items: EXTENT_DATA (ino, offset) → a regular extent
// (blocks on the device) or, for block 0 only, an inline extent. Every
// change runs under the inode's extMu write lock; readers map and read
// under its read lock.

// fileExtent is an extent item as found by extentsIn.
type fileExtent struct {
	off uint64 // file offset (the key's)
	x   engine.FileExtent
}

// end is the end of the file range the extent covers: an inline extent
// covers block 0.
func (f fileExtent) end() uint64 {
	if f.x.Type == engine.ExtentInline {
		return blockSize
	}
	return f.off + f.x.NumBytes
}

// extentsIn returns in's extents that overlap [start, end), in file order,
// with inline data copied.
func (s *Store) extentsIn(ino Ino, start, end uint64) ([]fileExtent, error) {
	var out []fileExtent
	var derr error
	keep := func(k engine.Key, b []byte) bool {
		x, err := engine.DecodeFileExtent(b)
		if err != nil {
			derr = err
			return false
		}
		x.Data = slices.Clone(x.Data)
		out = append(out, fileExtent{off: k.Offset, x: x})
		return true
	}
	// The extent that starts before start may reach into the range: one
	// descent for it and those from start on.
	from := extentKey(ino, start)
	err := s.fs.IterateFromFloor(from, func(k engine.Key, b []byte) bool {
		if k.Ino() != ino || k.Type != engine.TypeExtentData {
			return k.Less(from) // another item below the range: go on; above it: done
		}
		if k.Offset >= end {
			return false
		}
		return keep(k, b)
	})
	if err == nil {
		err = derr
	}
	out = slices.DeleteFunc(out, func(f fileExtent) bool { return f.end() <= start })
	return out, err
}

// dropExtents removes the mapping of [start, end) (block aligned, end may
// be ^0) from in's extents, freeing the blocks and their checksums, and
// returns how many data bytes it freed. Extents that straddle a bound keep
// their part outside: the left part keeps its item, the right part gets a
// new one.
func (s *Store) dropExtents(tr *engine.Trans, in *inode, start, end uint64) (uint64, error) {
	s.track.fileChanged(tr.ID(), in.ino, start, end)
	return s.dropExtentsKeeping(tr, in.ino, start, end, nil)
}

// dropExtentsKeeping is dropExtents without the change tracking, leaving
// the blocks of keep (disk ranges that items about to be inserted will
// reference again: log replay's) allocated, with their checksums.
func (s *Store) dropExtentsKeeping(tr *engine.Trans, ino Ino, start, end uint64, keep []extent) (uint64, error) {
	xs, err := s.extentsIn(ino, start, end)
	if err != nil {
		return 0, err
	}
	return s.dropFound(tr, ino, start, end, keep, xs)
}

// dropFound is dropExtentsKeeping given xs, the extents overlapping
// [start, end) as extentsIn found them.
func (s *Store) dropFound(tr *engine.Trans, ino Ino, start, end uint64, keep []extent, xs []fileExtent) (uint64, error) {
	var freed uint64
	for _, f := range xs {
		key := extentKey(ino, f.off)
		if f.x.Type == engine.ExtentInline {
			if err := s.fs.DeleteItem(tr, key); err != nil {
				return freed, err
			}
			freed += f.x.NumBytes
			continue
		}
		cutS, cutE := max(f.off, start), min(f.end(), end)
		left, right, disk := f.cut(cutS, cutE)
		if err := s.freeBlocks(tr, disk, cutE-cutS, keep); err != nil {
			return freed, err
		}
		freed += cutE - cutS
		if left.NumBytes > 0 {
			if err := s.fs.UpdateItem(tr, key, func(b []byte) { left.Encode(b[:0]) }); err != nil {
				return freed, err
			}
		} else if err := s.fs.DeleteItem(tr, key); err != nil {
			return freed, err
		}
		if right.NumBytes > 0 {
			if err := s.fs.InsertItem(tr, extentKey(ino, cutE), right.Encode(nil)); err != nil {
				return freed, err
			}
		}
	}
	return freed, nil
}

// mapExtent maps in's file range [off, off+fe.NumBytes) to the regular
// extent fe, dropping what was mapped there (dropExtents), and returns the
// data bytes it freed. When one regular extent covers the range — an
// overwrite inside a file, writeback's usual case — its item is changed in
// place rather than deleted and inserted again: it takes fe when it starts
// at off, else keeps its left part, and the items after it (fe, the right
// part) go in as one batch. That is one search of the fs tree fewer per
// overwrite (three, against dropExtents' four, for one in the middle of an
// extent; two, against three, for one that replaces a whole extent).
func (s *Store) mapExtent(tr *engine.Trans, in *inode, off uint64, fe engine.FileExtent) (uint64, error) {
	end := off + fe.NumBytes
	xs, err := s.extentsIn(in.ino, off, end)
	if err != nil {
		return 0, err
	}
	s.track.fileChanged(tr.ID(), in.ino, off, end)
	if len(xs) != 1 || xs[0].x.Type != engine.ExtentRegular || xs[0].off > off || xs[0].end() < end {
		freed, err := s.dropFound(tr, in.ino, off, end, nil, xs)
		if err != nil {
			return freed, err
		}
		return freed, s.fs.InsertItem(tr, extentKey(in.ino, off), fe.Encode(nil))
	}
	f := xs[0]
	left, right, disk := f.cut(off, end)
	if err := s.freeBlocks(tr, disk, fe.NumBytes, nil); err != nil {
		return 0, err
	}
	var keys []engine.Key
	var items [][]byte
	if left.NumBytes == 0 {
		if err := s.fs.UpdateItem(tr, extentKey(in.ino, off), func(b []byte) { fe.Encode(b[:0]) }); err != nil {
			return fe.NumBytes, err
		}
	} else {
		if err := s.fs.UpdateItem(tr, extentKey(in.ino, f.off), func(b []byte) { left.Encode(b[:0]) }); err != nil {
			return fe.NumBytes, err
		}
		keys, items = append(keys, extentKey(in.ino, off)), append(items, fe.Encode(nil))
	}
	if right.NumBytes > 0 {
		keys, items = append(keys, extentKey(in.ino, end)), append(items, right.Encode(nil))
	}
	if len(keys) == 0 {
		return fe.NumBytes, nil
	}
	b, err := engine.NewItemBatch(keys, items)
	if err != nil {
		return fe.NumBytes, err
	}
	return fe.NumBytes, s.fs.InsertItems(tr, b)
}

// cut splits regular extent f around the file range [cutS, cutE) inside
// it: the part before (its item keeps it), the part after (a new item at
// cutE) — NumBytes 0 where there is none — and where the range's blocks
// start on the device.
func (f fileExtent) cut(cutS, cutE uint64) (left, right engine.FileExtent, disk uint64) {
	left, right = f.x, f.x
	left.NumBytes = cutS - f.off
	right.DiskBytenr += engine.Bytenr(cutE - f.off)
	right.NumBytes = f.end() - cutE
	return left, right, uint64(f.x.DiskBytenr) + (cutS - f.off)
}

// freeBlocks frees the data blocks [disk, disk+length) and their
// checksums, but for those in keep.
func (s *Store) freeBlocks(tr *engine.Trans, disk, length uint64, keep []extent) error {
	for _, x := range subtract(extent{disk, length}, keep) {
		s.e.FreeData(tr, engine.Bytenr(x.start), x.length)
		if err := s.deleteCsums(tr, x.start, x.length); err != nil {
			return err
		}
	}
	return nil
}

// extent is a disk range.
type extent struct{ start, length uint64 }

// subtract returns the parts of x outside every range of keep.
func subtract(x extent, keep []extent) []extent {
	out := []extent{x}
	for _, k := range keep {
		var next []extent
		for _, o := range out {
			s, e := max(o.start, k.start), min(o.start+o.length, k.start+k.length)
			if s >= e {
				next = append(next, o)
				continue
			}
			if o.start < s {
				next = append(next, extent{o.start, s - o.start})
			}
			if e < o.start+o.length {
				next = append(next, extent{e, o.start + o.length - e})
			}
		}
		out = next
	}
	return out
}

// truncateInline shortens an inline extent to size bytes (0 deletes it)
// and returns the bytes freed.
func (s *Store) truncateInline(tr *engine.Trans, in *inode, size uint64) (uint64, error) {
	xs, err := s.extentsIn(in.ino, 0, blockSize)
	if err != nil || len(xs) == 0 || xs[0].x.Type != engine.ExtentInline || xs[0].x.NumBytes <= size {
		return 0, err
	}
	freed := xs[0].x.NumBytes - size
	s.track.fileChanged(tr.ID(), in.ino, 0, blockSize)
	key := extentKey(in.ino, 0)
	if size == 0 {
		return freed, s.fs.DeleteItem(tr, key)
	}
	return freed, s.fs.ResizeItem(tr, key, int(engine.FileExtentInlineSize(int(size))))
}
