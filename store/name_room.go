package store

import (
	"errors"
	"fmt"
	"syscall"

	"ustore/engine"
)

// Room for a name. Two of a name's items are lists that every name sharing
// them extends: the DIR_ITEM of its hash (names whose crc32c collides) and
// the INODE_REF of its inode in its directory (an inode's hard links
// there). An item must fit in a leaf (engine.Engine.ItemDataMax: 4055 bytes
// at 16 KiB nodes, 15 names of 255 bytes). btrfs without extended refs
// refuses the link whose inode ref would not fit with EMLINK
// (btrfs_insert_inode_ref) and the name whose collision chain would not fit
// with EOVERFLOW (btrfs_check_dir_item_collision); so does the store.
//
// The checks run before an operation's first change: past it, a failure
// aborts the transaction and turns the whole store read-only (doc.go,
// invariant 2), which no well-formed request may do.

// listItem returns the entries and the payload size of the list item at
// key; none and 0 if it does not exist. The names alias a copy.
func (s *Store) listItem(key engine.Key) ([]engine.DirEntry, int, error) {
	b, err := s.fs.Lookup(key)
	if errors.Is(err, engine.ErrNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	es, err := engine.DecodeDirEntries(b)
	if err != nil {
		return nil, 0, fmt.Errorf("item %v: %w", key, err)
	}
	return es, len(b), nil
}

// checkRoom returns errno if the list item at key cannot take an entry
// named add once the entries named in drop that it holds (each once) are
// gone: the operation removes those first, in the same transaction.
func (s *Store) checkRoom(key engine.Key, errno syscall.Errno, add string, drop ...string) error {
	es, size, err := s.listItem(key)
	if err != nil {
		return err
	}
	for _, d := range drop {
		for i, e := range es {
			if string(e.Name) == d {
				size -= engine.DirEntrySize(len(d))
				es = append(es[:i:i], es[i+1:]...)
				break
			}
		}
	}
	return s.roomFor(size, add, errno)
}

// roomFor returns errno if a list item of size bytes cannot take an entry
// named add.
func (s *Store) roomFor(size int, add string, errno syscall.Errno) error {
	if size+engine.DirEntrySize(len(add)) > s.e.ItemDataMax() {
		s.stats.nameItemFull.Add(1)
		return errno
	}
	return nil
}
