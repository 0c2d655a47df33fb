package store

import (
	"errors"
	"fmt"
	"syscall"

	"ustore/engine"
)

// A name is three items: DIR_ITEM (dir, hash) → its entry among those with
// that hash, DIR_INDEX (dir, index) → the entry alone (the listing order and
// the readdir cookie), and INODE_REF (child, dir) → the names the child has
// in dir (to find parents and count links).

// findEntry returns name's entry in dir, or ENOENT.
func (s *Store) findEntry(dir Ino, name string) (engine.DirEntry, error) {
	e, _, err := s.dirItem(dir, name)
	return e, err
}

// dirItem returns name's entry in dir (ENOENT if it has none) and the size
// of the DIR_ITEM of name's hash, 0 if there is none: how much room the
// hash chain has left (name_room.go).
func (s *Store) dirItem(dir Ino, name string) (engine.DirEntry, int, error) {
	es, size, err := s.listItem(dirItemKey(dir, name))
	if err != nil {
		return engine.DirEntry{}, 0, err
	}
	for _, e := range es {
		if string(e.Name) == name {
			return e, size, nil
		}
	}
	return engine.DirEntry{}, size, syscall.ENOENT
}

// addEntry adds name → child (of type typ) to dir in tr: dir.mu held, the
// name absent. It does not touch either inode's item.
func (s *Store) addEntry(tr *engine.Trans, dir *inode, name string, child Ino, typ uint8) error {
	return s.addEntryKnown(tr, dir, name, child, typ, false, false)
}

// addEntryKnown is addEntry for a caller that knows that name's DIR_ITEM
// is not there (nameAbsent: no name of its hash in dir, seen under
// dir.mu), inserted then without a search for it first; with refInserted
// the caller has inserted the child's INODE_REF in dir itself (newRef:
// a new inode's, in one batch with its inode item).
func (s *Store) addEntryKnown(tr *engine.Trans, dir *inode, name string, child Ino, typ uint8, nameAbsent, refInserted bool) error {
	idx := dir.nextIndex
	e := engine.DirEntry{Child: child, Type: typ, Index: idx, Name: []byte(name)}
	if err := s.appendEntryKnown(tr, dirItemKey(dir.ino, name), e, nameAbsent); err != nil {
		return err
	}
	if err := s.fs.InsertItem(tr, dirIndexKey(dir.ino, idx), engine.EncodeDirEntries(nil, e)); err != nil {
		return err
	}
	if !refInserted {
		if err := s.appendEntry(tr, refKey(child, dir.ino), newRef(dir, name)); err != nil {
			return err
		}
	}
	s.track.entryAdded(tr.ID(), dir.ino, idx, child)
	dir.nextIndex++
	return nil
}

// newRef is the INODE_REF entry of name, about to be added to dir (at its
// next index).
func newRef(dir *inode, name string) engine.DirEntry {
	return engine.DirEntry{Child: dir.ino, Index: dir.nextIndex, Name: []byte(name)}
}

// removeEntry removes name (whose entry is e) from dir in tr.
func (s *Store) removeEntry(tr *engine.Trans, dir Ino, name string, e engine.DirEntry) error {
	if err := s.dropEntry(tr, dirItemKey(dir, name), name); err != nil {
		return err
	}
	if err := s.fs.DeleteItem(tr, dirIndexKey(dir, e.Index)); err != nil {
		return fmt.Errorf("dir %d index %d: %w", dir, e.Index, err)
	}
	s.track.entryRemoved(tr.ID(), dir, e.Index, e.Child)
	return s.dropEntry(tr, refKey(e.Child, dir), name)
}

// removeName is removeEntry for an unlink or rmdir that knows more
// (removeHeld): itemSize is the size of the DIR_ITEM of name's hash, as a
// search under dir's mu found it — when it holds name's entry alone, the
// item is deleted without a search to read it first; refGoes says the
// child's items are deleted in the same transaction (deleteInode's range
// holds its INODE_REF), so its INODE_REF is not searched for and cut on
// its own. A name removed this way costs three descents of the tree, not
// seven.
func (s *Store) removeName(tr *engine.Trans, dir Ino, name string, e engine.DirEntry, itemSize int, refGoes bool) error {
	key := dirItemKey(dir, name)
	if itemSize == engine.DirEntrySize(len(name)) {
		if err := s.fs.DeleteItem(tr, key); err != nil {
			return fmt.Errorf("item %v: %w", key, err)
		}
	} else if err := s.dropEntry(tr, key, name); err != nil {
		return err
	}
	if err := s.fs.DeleteItem(tr, dirIndexKey(dir, e.Index)); err != nil {
		return fmt.Errorf("dir %d index %d: %w", dir, e.Index, err)
	}
	s.track.entryRemoved(tr.ID(), dir, e.Index, e.Child)
	if refGoes {
		return nil
	}
	return s.dropEntry(tr, refKey(e.Child, dir), name)
}

// appendEntry adds e to the list item at key, creating it.
func (s *Store) appendEntry(tr *engine.Trans, key engine.Key, e engine.DirEntry) error {
	return s.appendEntryKnown(tr, key, e, false)
}

// appendEntryKnown is appendEntry; with absent, the caller knows there is
// no item at key, and it is inserted without a search for it first.
func (s *Store) appendEntryKnown(tr *engine.Trans, key engine.Key, e engine.DirEntry, absent bool) error {
	var old []byte
	err := engine.ErrNotFound
	if !absent {
		old, err = s.fs.Lookup(key)
	}
	if errors.Is(err, engine.ErrNotFound) {
		s.track.itemGrown(tr.ID(), key, engine.DirEntrySize(len(e.Name)), s.e.ItemDataMax())
		return s.fs.InsertItem(tr, key, engine.EncodeDirEntries(nil, e))
	}
	if err != nil {
		return err
	}
	n := len(old)
	if err := s.fs.ResizeItem(tr, key, n+engine.DirEntrySize(len(e.Name))); err != nil {
		return err
	}
	s.track.itemGrown(tr.ID(), key, n+engine.DirEntrySize(len(e.Name)), s.e.ItemDataMax())
	return s.fs.UpdateItem(tr, key, func(b []byte) { engine.EncodeDirEntries(b[:n], e) })
}

// dropEntry removes the entry named name from the list item at key,
// deleting the item with its last entry.
func (s *Store) dropEntry(tr *engine.Trans, key engine.Key, name string) error {
	old, err := s.fs.Lookup(key)
	if err != nil {
		return fmt.Errorf("item %v: %w", key, err)
	}
	es, err := engine.DecodeDirEntries(old)
	if err != nil {
		return err
	}
	var keep []engine.DirEntry
	found := false
	for _, e := range es {
		if !found && string(e.Name) == name {
			found = true
			continue
		}
		keep = append(keep, e)
	}
	if !found {
		return fmt.Errorf("%w: item %v has no entry %q", engine.ErrCorruption, key, name)
	}
	if len(keep) == 0 {
		return s.fs.DeleteItem(tr, key)
	}
	s.track.itemShrunk(tr.ID(), key, engine.DirEntrySize(len(name)))
	b := engine.EncodeDirEntries(nil, keep...)
	if err := s.fs.UpdateItem(tr, key, func(d []byte) { copy(d, b) }); err != nil {
		return err
	}
	return s.fs.ResizeItem(tr, key, len(b))
}

// parentOf returns a directory's parent (its one INODE_REF); the root is
// its own parent.
func (s *Store) parentOf(dir Ino) (Ino, error) {
	if dir == engine.RootDirIno {
		return dir, nil
	}
	var parent Ino
	err := s.fs.Iterate(engine.InoKey(dir, engine.TypeInodeRef, 0), func(k engine.Key, _ []byte) bool {
		if k.Ino() == dir && k.Type == engine.TypeInodeRef {
			parent = refParent(k)
		}
		return false
	})
	if err != nil {
		return 0, err
	}
	if parent == 0 {
		return 0, fmt.Errorf("%w: directory %d has no parent", engine.ErrCorruption, dir)
	}
	return parent, nil
}

// dirEmpty reports whether dir has no entries.
func (s *Store) dirEmpty(dir Ino) (bool, error) {
	empty := true
	err := s.fs.Iterate(dirIndexKey(dir, 0), func(k engine.Key, _ []byte) bool {
		empty = !(k.Ino() == dir && k.Type == engine.TypeDirIndex)
		return false
	})
	return empty, err
}
