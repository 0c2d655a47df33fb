package store

import (
	"errors"
	"fmt"

	"ustore/engine"
)

// Check is fsck for a quiescent store (nothing buffered, everything
// committed — call it after Sync, or on a freshly opened store): the
// engine's checks (tree shape, checksums, space, data checksums) and the
// namespace's — every name is three matching items (DIR_ITEM, DIR_INDEX,
// INODE_REF) pointing at an existing inode, link counts and directory
// sizes match the names, every inode but the root has a name and every
// directory exactly one, extents do not overlap and add up to the inode's
// byte count, reach no further than the block holding the file's end,
// and each item's fields are ones the store can write (check_items.go).
// Data blocks are not read: Scrub does that.
func (s *Store) Check() error {
	r := engine.Check(s.e)
	errs := []error{r.Err()}
	committed := s.e.CommittedGeneration()
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	type inodeInfo struct {
		item         engine.InodeItem
		names        int // INODE_REF entries
		parents      map[uint64]bool
		subdirs      int
		entries      int // DIR_INDEX entries (directories)
		nbytes       uint64
		lastExtentTo uint64
	}
	inodes := map[uint64]*inodeInfo{}
	get := func(ino uint64) *inodeInfo {
		i := inodes[ino]
		if i == nil {
			i = &inodeInfo{parents: map[uint64]bool{}}
			inodes[ino] = i
		}
		return i
	}
	seenItem := map[uint64]bool{}
	type name struct {
		dir   uint64
		index uint64
	}
	dirItems := map[name]engine.DirEntry{} // from DIR_ITEM, by (dir, index)
	dirIndex := map[name]engine.DirEntry{} // from DIR_INDEX
	refs := map[name]engine.DirEntry{}     // from INODE_REF, Child = the inode
	err := s.fs.Iterate(engine.MinKey, func(k engine.Key, b []byte) bool {
		switch k.Type {
		case engine.TypeInodeItem:
			it, err := engine.DecodeInodeItem(b)
			if err != nil {
				add("inode %d: %v", k.ObjectID, err)
				return true
			}
			get(k.ObjectID).item = it
			seenItem[k.ObjectID] = true
			errs = append(errs, s.checkInodeFields(k.ObjectID, it, committed)...)
		case engine.TypeDirItem, engine.TypeDirIndex, engine.TypeInodeRef:
			es, err := engine.DecodeDirEntries(b)
			if err != nil {
				add("item %v: %v", k, err)
				return true
			}
			for _, e := range es {
				switch k.Type {
				case engine.TypeDirItem:
					if nameHash(string(e.Name)) != k.Offset {
						add("dir %d: name %q under hash %d", k.ObjectID, e.Name, k.Offset)
					}
					dirItems[name{k.ObjectID, e.Index}] = e
				case engine.TypeDirIndex:
					if e.Index != k.Offset || len(es) != 1 {
						add("dir %d: index item %d holds %d entries, index %d", k.ObjectID, k.Offset, len(es), e.Index)
					}
					dirIndex[name{k.ObjectID, e.Index}] = e
					get(k.ObjectID).entries++
					if e.Type == TypeDir {
						get(k.ObjectID).subdirs++
					}
				case engine.TypeInodeRef:
					refs[name{k.Offset, e.Index}] = engine.DirEntry{Child: k.ObjectID, Name: e.Name}
					i := get(k.ObjectID)
					i.names++
					i.parents[k.Offset] = true
				}
			}
		case engine.TypeExtentData:
			x, err := engine.DecodeFileExtent(b)
			if err != nil {
				add("item %v: %v", k, err)
				return true
			}
			errs = append(errs, s.checkExtentFields(k, x, committed)...)
			i := get(k.ObjectID)
			if k.Offset%blockSize != 0 || k.Offset < i.lastExtentTo {
				add("inode %d: extent at %d overlaps the one before (ends %d) or is unaligned", k.ObjectID, k.Offset, i.lastExtentTo)
			}
			i.nbytes += x.NumBytes
			i.lastExtentTo = k.Offset + x.NumBytes
			if x.Type == engine.ExtentInline {
				i.lastExtentTo = blockSize
			}
		default:
			add("fs tree: unexpected item %v", k)
		}
		return true
	})
	if err != nil {
		errs = append(errs, err)
	}
	for n, e := range dirIndex {
		di, ok := dirItems[n]
		if !ok || string(di.Name) != string(e.Name) || di.Child != e.Child || di.Type != e.Type {
			add("dir %d: index %d (%q → %d) has no matching name item", n.dir, n.index, e.Name, e.Child)
		}
		ref, ok := refs[n]
		if !ok || string(ref.Name) != string(e.Name) || ref.Child != e.Child {
			add("dir %d: entry %q → %d has no matching inode ref", n.dir, e.Name, e.Child)
		}
		child, ok := inodes[e.Child]
		if !ok || !seenItem[e.Child] {
			add("dir %d: entry %q points at missing inode %d", n.dir, e.Name, e.Child)
		} else if dtype(child.item.Mode) != e.Type {
			add("dir %d: entry %q has type %d, inode %d mode %o", n.dir, e.Name, e.Type, e.Child, child.item.Mode)
		}
	}
	if len(dirItems) != len(dirIndex) {
		add("%d name items, %d index items", len(dirItems), len(dirIndex))
	}
	if len(refs) != len(dirIndex) {
		add("%d inode refs, %d index items", len(refs), len(dirIndex))
	}
	for ino, i := range inodes {
		if !seenItem[ino] {
			add("items of inode %d, which has no inode item", ino)
			continue
		}
		isDir := i.item.Mode&ModeType == ModeDir
		switch {
		case ino == RootIno:
			if i.names != 0 {
				add("root directory has %d names", i.names)
			}
		case i.names == 0:
			add("inode %d has no name", ino)
		case isDir && i.names != 1:
			add("directory %d has %d names", ino, i.names)
		}
		if isDir {
			if want := uint32(2 + i.subdirs); i.item.Nlink != want {
				add("directory %d: nlink %d, want %d", ino, i.item.Nlink, want)
			}
			if i.item.Size != uint64(i.entries) {
				add("directory %d: size %d, %d entries", ino, i.item.Size, i.entries)
			}
			if i.nbytes != 0 {
				add("directory %d has file extents", ino)
			}
		} else {
			if i.item.Nlink != uint32(i.names) {
				add("inode %d: nlink %d, %d names", ino, i.item.Nlink, i.names)
			}
			// A size past MaxFileSize is reported above; rounding it up
			// could overflow.
			if end := (min(i.item.Size, MaxFileSize) + blockSize - 1) / blockSize * blockSize; i.lastExtentTo > end {
				add("inode %d: extents reach %d, past its size %d", ino, i.lastExtentTo, i.item.Size)
			}
			if i.item.Nbytes != i.nbytes {
				add("inode %d: nbytes %d, extents hold %d", ino, i.item.Nbytes, i.nbytes)
			}
		}
		// A read-only store does not look for the next inode number.
		if ino >= s.nextIno.Load() && !s.opts.ReadOnly {
			add("inode %d at or above the next inode number %d", ino, s.nextIno.Load())
		}
	}
	return errors.Join(errs...)
}
