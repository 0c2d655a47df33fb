package store

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"syscall"

	"ustore/engine"
	"ustore/logtree"
)

// replayer applies a log at mount (logtree.Target), at the item level: no
// inode is in memory yet. It remembers every inode whose items or names it
// touched; ReplayDone recomputes what depends on the whole namespace — link
// counts, directory sizes, byte counts — and deletes what was left without
// a name (btrfs: fixup_inode_link_counts, and "redo the rm -rf").
type replayer struct {
	s       *Store
	touched map[Ino]struct{}
}

var _ logtree.Target = (*replayer)(nil)

func (r *replayer) touch(inos ...Ino) {
	for _, ino := range inos {
		r.touched[ino] = struct{}{}
	}
}

func (r *replayer) ReplayInode(tr *engine.Trans, ino Ino, item engine.InodeItem, _ logtree.LogFlags) error {
	r.touch(ino)
	b := item.Encode(nil)
	err := r.s.fs.UpdateItem(tr, inodeKey(ino), func(d []byte) { copy(d, b) })
	if errors.Is(err, engine.ErrNotFound) {
		err = r.s.fs.InsertItem(tr, inodeKey(ino), b)
	}
	return err
}

// entriesIn returns dir's DIR_INDEX entries with an index in [lo, hi).
func (r *replayer) entriesIn(dir Ino, lo, hi uint64) ([]engine.DirEntry, error) {
	var out []engine.DirEntry
	var derr error
	err := r.s.fs.Iterate(dirIndexKey(dir, lo), func(k engine.Key, b []byte) bool {
		if k.Ino() != dir || k.Type != engine.TypeDirIndex || k.Offset >= hi {
			return false
		}
		es, err := engine.DecodeDirEntries(b)
		if err != nil || len(es) != 1 {
			derr = errors.Join(err, fmt.Errorf("%w: DIR_INDEX %v", engine.ErrCorruption, k))
			return false
		}
		es[0].Name = slices.Clone(es[0].Name)
		out = append(out, es[0])
		return true
	})
	if err == nil {
		err = derr
	}
	return out, err
}

func sameEntry(a, b engine.DirEntry) bool {
	return a.Child == b.Child && a.Index == b.Index && string(a.Name) == string(b.Name)
}

func (r *replayer) ReplayDirRange(tr *engine.Trans, dir Ino, lo, hi uint64, logged []engine.DirEntry) error {
	r.touch(dir)
	have, err := r.entriesIn(dir, lo, hi)
	if err != nil {
		return err
	}
	kept := map[uint64]bool{}
	for _, h := range have {
		i := slices.IndexFunc(logged, func(l engine.DirEntry) bool { return sameEntry(l, h) })
		if i >= 0 {
			kept[h.Index] = true
			continue
		}
		r.touch(h.Child)
		if err := r.s.removeEntry(tr, dir, string(h.Name), h); err != nil {
			return err
		}
	}
	for _, l := range logged {
		if !kept[l.Index] {
			if err := r.addName(tr, dir, l); err != nil {
				return err
			}
		}
	}
	return nil
}

// addName adds entry e (Child: the inode) to dir, first removing whatever
// holds its name or its index there.
func (r *replayer) addName(tr *engine.Trans, dir Ino, e engine.DirEntry) error {
	r.touch(dir, e.Child)
	name := string(e.Name)
	if old, err := r.s.findEntry(dir, name); err == nil {
		r.touch(old.Child)
		if err := r.s.removeEntry(tr, dir, name, old); err != nil {
			return err
		}
	} else if !errors.Is(err, syscall.ENOENT) {
		return err
	}
	if olds, err := r.entriesIn(dir, e.Index, e.Index+1); err != nil {
		return err
	} else if len(olds) == 1 {
		r.touch(olds[0].Child)
		if err := r.s.removeEntry(tr, dir, string(olds[0].Name), olds[0]); err != nil {
			return err
		}
	}
	if err := r.s.appendEntry(tr, dirItemKey(dir, name), e); err != nil {
		return err
	}
	if err := r.s.fs.InsertItem(tr, dirIndexKey(dir, e.Index), engine.EncodeDirEntries(nil, e)); err != nil {
		return err
	}
	return r.s.appendEntry(tr, refKey(e.Child, dir), engine.DirEntry{Child: dir, Index: e.Index, Name: e.Name})
}

func (r *replayer) ReplayNames(tr *engine.Trans, ino Ino, refs []engine.DirEntry) error {
	r.touch(ino)
	have, err := r.s.inodeRefs(ino)
	if err != nil {
		return err
	}
	b, err := r.s.fs.Lookup(inodeKey(ino))
	if err != nil {
		return err
	}
	item, err := engine.DecodeInodeItem(b)
	if err != nil {
		return err
	}
	for _, h := range have {
		if slices.ContainsFunc(refs, func(l engine.DirEntry) bool { return sameEntry(l, h) }) {
			continue
		}
		r.touch(h.Child)
		e := engine.DirEntry{Child: ino, Type: dtype(item.Mode), Index: h.Index, Name: h.Name}
		if err := r.s.removeEntry(tr, h.Child, string(h.Name), e); err != nil {
			return err
		}
	}
	for _, l := range refs {
		if slices.ContainsFunc(have, func(h engine.DirEntry) bool { return sameEntry(l, h) }) {
			continue
		}
		if _, err := r.s.fs.Lookup(inodeKey(l.Child)); err != nil {
			return fmt.Errorf("parent %d of %d: %w", l.Child, ino, err)
		}
		e := engine.DirEntry{Child: ino, Type: dtype(item.Mode), Index: l.Index, Name: l.Name}
		if err := r.addName(tr, l.Child, e); err != nil {
			return err
		}
	}
	return nil
}

func (r *replayer) ReplayXattrs(tr *engine.Trans, ino Ino, xattrs []engine.XattrEntry) error {
	r.touch(ino)
	if _, err := r.s.fs.DeleteRange(tr, engine.InoKey(ino, engine.TypeXattrItem, 0),
		engine.InoKey(ino, engine.TypeXattrItem, ^uint64(0))); err != nil {
		return err
	}
	// The logged items are copies of the tree's: regrouped by hash, each
	// is one the store held.
	byHash := map[uint64][]engine.XattrEntry{}
	for _, x := range xattrs {
		h := nameHash(string(x.Name))
		byHash[h] = append(byHash[h], x)
	}
	hashes := slices.Sorted(maps.Keys(byHash))
	for _, h := range hashes {
		key := engine.InoKey(ino, engine.TypeXattrItem, h)
		if err := r.s.fs.InsertItem(tr, key, engine.EncodeXattrEntries(nil, byHash[h]...)); err != nil {
			return err
		}
	}
	return nil
}

func (r *replayer) ReplayFileRange(tr *engine.Trans, ino Ino, start, end uint64, exts []logtree.Extent) error {
	r.touch(ino)
	// Blocks the log references again (a committed extent logged whole
	// because its range changed around it) stay allocated.
	var keep []extent
	for _, x := range exts {
		if x.Item.Type == engine.ExtentRegular {
			keep = append(keep, extent{uint64(x.Item.DiskBytenr), x.Item.NumBytes})
		}
	}
	if _, err := r.s.dropExtentsKeeping(tr, ino, start, end, keep); err != nil {
		return err
	}
	for _, x := range exts {
		if err := r.s.fs.InsertItem(tr, extentKey(ino, x.Off), x.Item.Encode(nil)); err != nil {
			return err
		}
	}
	return nil
}

func (r *replayer) ReplayCsums(tr *engine.Trans, start uint64, sums []byte) error {
	n := uint64(len(sums) / engine.CsumSize)
	if err := r.s.deleteCsums(tr, start, n*blockSize); err != nil {
		return err
	}
	return r.s.csum.InsertItem(tr, csumKey(start), sums)
}

// ReplayDone recomputes link counts, directory sizes and byte counts of
// every touched inode, and deletes those left without a name — a
// directory with everything under it that has no other name.
func (r *replayer) ReplayDone(tr *engine.Trans) error {
	done := map[Ino]bool{}
	for {
		var todo []Ino
		for ino := range r.touched {
			if !done[ino] {
				todo = append(todo, ino)
			}
		}
		if len(todo) == 0 {
			return nil
		}
		slices.Sort(todo)
		for _, ino := range todo {
			done[ino] = true
			if err := r.fixup(tr, ino); err != nil {
				return fmt.Errorf("inode %d: %w", ino, err)
			}
		}
	}
}

func (r *replayer) fixup(tr *engine.Trans, ino Ino) error {
	s := r.s
	b, err := s.fs.Lookup(inodeKey(ino))
	if errors.Is(err, engine.ErrNotFound) {
		return nil // deleted
	}
	if err != nil {
		return err
	}
	item, err := engine.DecodeInodeItem(b)
	if err != nil {
		return err
	}
	names, err := r.s.inodeRefs(ino)
	if err != nil {
		return err
	}
	in := &inode{ino: ino}
	if len(names) == 0 && ino != engine.RootDirIno {
		// Orphaned: its last name was removed by the log.
		if item.Mode&ModeType == ModeDir {
			es, err := r.entriesIn(ino, 0, ^uint64(0))
			if err != nil {
				return err
			}
			for _, e := range es {
				r.touch(e.Child)
				if err := s.removeEntry(tr, ino, string(e.Name), e); err != nil {
					return err
				}
			}
		}
		if _, err := s.dropExtents(tr, in, 0, ^uint64(0)); err != nil {
			return err
		}
		_, err := s.fs.DeleteRange(tr, engine.InoKey(ino, 0, 0), engine.InoKey(ino, 0xff, ^uint64(0)))
		return err
	}
	if item.Mode&ModeType == ModeDir {
		es, err := r.entriesIn(ino, 0, ^uint64(0))
		if err != nil {
			return err
		}
		subdirs := 0
		for _, e := range es {
			if e.Type == TypeDir {
				subdirs++
			}
		}
		item.Size, item.Nlink = uint64(len(es)), uint32(2+subdirs)
	} else {
		item.Nlink = uint32(len(names))
		// Nothing past the size (a logged truncate's range drops it too).
		end := (item.Size + blockSize - 1) / blockSize * blockSize
		if _, err := s.dropExtents(tr, in, end, ^uint64(0)); err != nil {
			return err
		}
		xs, err := s.extentsIn(ino, 0, ^uint64(0))
		if err != nil {
			return err
		}
		item.Nbytes = 0
		for _, x := range xs {
			item.Nbytes += x.x.NumBytes
		}
	}
	enc := item.Encode(nil)
	return s.fs.UpdateItem(tr, inodeKey(ino), func(d []byte) { copy(d, enc) })
}
