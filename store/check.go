package store

import (
	"errors"
	"fmt"

	"ustore/engine"
	"ustore/journal"
)

// Check is fsck for a quiescent store (nothing buffered, everything
// committed — call it after Sync, or on a freshly opened store): the
// engine's checks (tree shape, checksums, space, data checksums) and the
// namespace's — every name is three matching items (DIR_ITEM, DIR_INDEX,
// INODE_REF) pointing at an existing inode, link counts and directory
// sizes match the names, every inode but the root and the orphans has a
// name and every directory exactly one, every orphan item names a file
// with nlink 0, extents do not overlap and add up to the inode's
// byte count, reach no further than the block holding the file's end, a
// symbolic link has its target as its one extent (inline, its size in
// bytes), extended attributes decode, are of the user namespace and lie
// under their names' hash, and each item's fields are ones the store can
// write (check_items.go).
// Data blocks are not read: Scrub does that.
func (s *Store) Check() error {
	r := engine.Check(s.e)
	c := newNamespaceCheck(s, s.e.CommittedGeneration())
	c.errs = append(c.errs, r.Err())
	if err := s.fs.Iterate(engine.MinKey, c.visit); err != nil {
		c.errs = append(c.errs, err)
	}
	c.checkNames()
	c.checkInodes()
	c.checkOrphans()
	return errors.Join(c.errs...)
}

// namespaceCheck gathers, in one pass over the fs tree, what Check compares
// afterwards: each inode's item and the names and extents that point at it,
// and the three items of every name keyed by (directory, index).
type namespaceCheck struct {
	s         *Store
	committed journal.Transid
	errs      []error

	inodes   map[Ino]*inodeInfo
	seenItem map[Ino]bool                // inodes whose INODE_ITEM was seen
	dirItems map[dirName]engine.DirEntry // from DIR_ITEM
	dirIndex map[dirName]engine.DirEntry // from DIR_INDEX
	refs     map[dirName]engine.DirEntry // from INODE_REF, Child = the inode
	orphans  map[Ino]bool                // inodes named by ORPHAN_ITEMs
}

// inodeInfo is what the fs tree says about one inode.
type inodeInfo struct {
	item         engine.InodeItem
	names        int // INODE_REF entries
	parents      map[Ino]bool
	subdirs      int
	entries      int // DIR_INDEX entries (directories)
	nbytes       uint64
	lastExtentTo uint64
	extents      int    // EXTENT_DATA items
	inlineBytes  uint64 // the inline extent's bytes, if it has one (at offset 0)
}

// dirName is one name: its directory and its DIR_INDEX index.
type dirName struct {
	dir   Ino
	index uint64
}

func newNamespaceCheck(s *Store, committed journal.Transid) *namespaceCheck {
	return &namespaceCheck{
		s:         s,
		committed: committed,
		inodes:    map[Ino]*inodeInfo{},
		seenItem:  map[Ino]bool{},
		dirItems:  map[dirName]engine.DirEntry{},
		dirIndex:  map[dirName]engine.DirEntry{},
		refs:      map[dirName]engine.DirEntry{},
		orphans:   map[Ino]bool{},
	}
}

func (c *namespaceCheck) add(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

func (c *namespaceCheck) inode(ino Ino) *inodeInfo {
	i := c.inodes[ino]
	if i == nil {
		i = &inodeInfo{parents: map[Ino]bool{}}
		c.inodes[ino] = i
	}
	return i
}

// visit takes in one fs tree item; it always goes on to the next.
func (c *namespaceCheck) visit(k engine.Key, b []byte) bool {
	switch k.Type {
	case engine.TypeInodeItem:
		c.visitInode(k, b)
	case engine.TypeDirItem, engine.TypeDirIndex, engine.TypeInodeRef:
		c.visitNames(k, b)
	case engine.TypeExtentData:
		c.visitExtent(k, b)
	case engine.TypeOrphanItem:
		if k.ObjectID != engine.OrphanObjectID || len(b) != 0 {
			c.add("fs tree: malformed orphan item %v of %d bytes", k, len(b))
			return true
		}
		c.orphans[Ino(k.Offset)] = true
	case engine.TypeXattrItem:
		c.visitXattr(k, b)
	default:
		c.add("fs tree: unexpected item %v", k)
	}
	return true
}

func (c *namespaceCheck) visitInode(k engine.Key, b []byte) {
	it, err := engine.DecodeInodeItem(b)
	if err != nil {
		c.add("inode %d: %v", k.Ino(), err)
		return
	}
	c.inode(k.Ino()).item = it
	c.seenItem[k.Ino()] = true
	c.errs = append(c.errs, c.s.checkInodeFields(k.Ino(), it, c.committed)...)
}

// visitNames takes in a DIR_ITEM, DIR_INDEX or INODE_REF item.
func (c *namespaceCheck) visitNames(k engine.Key, b []byte) {
	es, err := engine.DecodeDirEntries(b)
	if err != nil {
		c.add("item %v: %v", k, err)
		return
	}
	for _, e := range es {
		switch k.Type {
		case engine.TypeDirItem:
			if nameHash(string(e.Name)) != k.Offset {
				c.add("dir %d: name %q under hash %d", k.Ino(), e.Name, k.Offset)
			}
			c.dirItems[dirName{k.Ino(), e.Index}] = e
		case engine.TypeDirIndex:
			if e.Index != k.Offset || len(es) != 1 {
				c.add("dir %d: index item %d holds %d entries, index %d", k.Ino(), k.Offset, len(es), e.Index)
			}
			c.dirIndex[dirName{k.Ino(), e.Index}] = e
			c.inode(k.Ino()).entries++
			if e.Type == TypeDir {
				c.inode(k.Ino()).subdirs++
			}
		case engine.TypeInodeRef:
			c.refs[dirName{refParent(k), e.Index}] = engine.DirEntry{Child: k.Ino(), Name: e.Name}
			i := c.inode(k.Ino())
			i.names++
			i.parents[refParent(k)] = true
		}
	}
}

// visitXattr takes in an XATTR_ITEM: entries that decode, of the user
// namespace, under their names' hash. The inode it belongs to must exist
// (checkInodes: items of an inode without its item).
func (c *namespaceCheck) visitXattr(k engine.Key, b []byte) {
	c.inode(k.Ino())
	es, err := engine.DecodeXattrEntries(b)
	if err != nil {
		c.add("item %v: %v", k, err)
		return
	}
	for _, e := range es {
		if err := checkXattrName(string(e.Name)); err != nil {
			c.add("inode %d: extended attribute %q: %v", k.Ino(), e.Name, err)
		}
		if nameHash(string(e.Name)) != k.Offset {
			c.add("inode %d: extended attribute %q under hash %d", k.Ino(), e.Name, k.Offset)
		}
	}
}

func (c *namespaceCheck) visitExtent(k engine.Key, b []byte) {
	x, err := engine.DecodeFileExtent(b)
	if err != nil {
		c.add("item %v: %v", k, err)
		return
	}
	c.errs = append(c.errs, c.s.checkExtentFields(k, x, c.committed)...)
	i := c.inode(k.Ino())
	if k.Offset%blockSize != 0 || k.Offset < i.lastExtentTo {
		c.add("inode %d: extent at %d overlaps the one before (ends %d) or is unaligned", k.Ino(), k.Offset, i.lastExtentTo)
	}
	i.nbytes += x.NumBytes
	i.extents++
	i.lastExtentTo = k.Offset + x.NumBytes
	if x.Type == engine.ExtentInline {
		i.lastExtentTo = blockSize
		if k.Offset == 0 {
			i.inlineBytes = x.NumBytes
		}
	}
}

// checkNames checks that every name is three matching items pointing at an
// existing inode of the name's type.
func (c *namespaceCheck) checkNames() {
	for n, e := range c.dirIndex {
		di, ok := c.dirItems[n]
		if !ok || string(di.Name) != string(e.Name) || di.Child != e.Child || di.Type != e.Type {
			c.add("dir %d: index %d (%q → %d) has no matching name item", n.dir, n.index, e.Name, e.Child)
		}
		ref, ok := c.refs[n]
		if !ok || string(ref.Name) != string(e.Name) || ref.Child != e.Child {
			c.add("dir %d: entry %q → %d has no matching inode ref", n.dir, e.Name, e.Child)
		}
		child, ok := c.inodes[e.Child]
		if !ok || !c.seenItem[e.Child] {
			c.add("dir %d: entry %q points at missing inode %d", n.dir, e.Name, e.Child)
		} else if dtype(child.item.Mode) != e.Type {
			c.add("dir %d: entry %q has type %d, inode %d mode %o", n.dir, e.Name, e.Type, e.Child, child.item.Mode)
		}
	}
	if len(c.dirItems) != len(c.dirIndex) {
		c.add("%d name items, %d index items", len(c.dirItems), len(c.dirIndex))
	}
	if len(c.refs) != len(c.dirIndex) {
		c.add("%d inode refs, %d index items", len(c.refs), len(c.dirIndex))
	}
}

// checkInodes checks each inode against its names and extents.
func (c *namespaceCheck) checkInodes() {
	for ino, i := range c.inodes {
		if !c.seenItem[ino] {
			c.add("items of inode %d, which has no inode item", ino)
			continue
		}
		isDir := i.item.Mode&ModeType == ModeDir
		switch {
		case ino == RootIno:
			if i.names != 0 {
				c.add("root directory has %d names", i.names)
			}
		case i.names == 0 && c.orphans[ino]:
			// An orphan: open and unlinked (orphan.go); checkOrphans
			// checks its item.
		case i.names == 0:
			c.add("inode %d has no name", ino)
		case isDir && i.names != 1:
			c.add("directory %d has %d names", ino, i.names)
		}
		switch i.item.Mode & ModeType {
		case ModeDir:
			c.checkDir(ino, i)
		case ModeLink:
			c.checkLink(ino, i)
			c.checkFile(ino, i)
		default:
			c.checkFile(ino, i)
		}
		// A read-only store does not look for the next inode number.
		if ino >= c.s.nextIno.Load() && !c.s.opts.ReadOnly {
			c.add("inode %d at or above the next inode number %d", ino, c.s.nextIno.Load())
		}
	}
}

// checkOrphans checks that every orphan item names a file with nlink 0 (an
// nlink-0 file without one has no name, which checkInodes reports; so is a
// name of an orphan, by checkFile's link count).
func (c *namespaceCheck) checkOrphans() {
	for ino := range c.orphans {
		i, ok := c.inodes[ino]
		switch {
		case !ok || !c.seenItem[ino]:
			c.add("orphan item for inode %d, which has no inode item", ino)
		case i.item.Mode&ModeType == ModeDir:
			c.add("orphan item for directory %d", ino)
		case i.item.Nlink != 0:
			c.add("orphan item for inode %d with nlink %d", ino, i.item.Nlink)
		}
	}
}

// checkDir checks a directory's link count and size against its entries.
func (c *namespaceCheck) checkDir(ino Ino, i *inodeInfo) {
	if want := uint32(2 + i.subdirs); i.item.Nlink != want {
		c.add("directory %d: nlink %d, want %d", ino, i.item.Nlink, want)
	}
	if i.item.Size != uint64(i.entries) {
		c.add("directory %d: size %d, %d entries", ino, i.item.Size, i.entries)
	}
	if i.nbytes != 0 {
		c.add("directory %d has file extents", ino)
	}
}

// checkLink checks a symbolic link's target: exactly one extent, inline
// at offset 0, holding the link's size in bytes — neither empty nor
// longer than a target may be (symlink.go). checkFile checks the rest.
func (c *namespaceCheck) checkLink(ino Ino, i *inodeInfo) {
	if i.extents != 1 || i.inlineBytes == 0 || i.inlineBytes != i.item.Size {
		c.add("symbolic link %d: %d extents, inline target of %d bytes, size %d; want one inline extent of its size",
			ino, i.extents, i.inlineBytes, i.item.Size)
	}
	if max := c.s.SymlinkTargetMax(); i.item.Size > uint64(max) {
		c.add("symbolic link %d: target of %d bytes, more than %d", ino, i.item.Size, max)
	}
}

// checkFile checks a file's link count and byte counts against its names
// and extents.
func (c *namespaceCheck) checkFile(ino Ino, i *inodeInfo) {
	if i.item.Nlink != uint32(i.names) {
		c.add("inode %d: nlink %d, %d names", ino, i.item.Nlink, i.names)
	}
	// A size past MaxFileSize is reported by checkInodeFields; rounding it
	// up could overflow.
	if end := (min(i.item.Size, MaxFileSize) + blockSize - 1) / blockSize * blockSize; i.lastExtentTo > end {
		c.add("inode %d: extents reach %d, past its size %d", ino, i.lastExtentTo, i.item.Size)
	}
	if i.item.Nbytes != i.nbytes {
		c.add("inode %d: nbytes %d, extents hold %d", ino, i.item.Nbytes, i.nbytes)
	}
}
