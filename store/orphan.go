package store

import (
	"errors"
	"fmt"
	"syscall"

	"ustore/engine"
	"ustore/internal/assert"
)

// Open files and orphans (btrfs: ORPHAN_ITEM, btrfs_orphan_add and
// btrfs_orphan_cleanup). A hold (Open) keeps a file's inode and data while
// it is in use: when the file's last name goes (an unlink, a rename over
// it) while it has holds, the inode stays with nlink 0, still readable and
// writable by number, and an ORPHAN_ITEM (OrphanObjectID, ORPHAN_ITEM, ino)
// enters the tree in the same transaction as the name's removal. The last
// Release of such an inode frees it — its items, its extents and its
// orphan item — in one transaction. A crash in between leaves the orphan
// item: mount frees every inode one names, after log replay, so a crash
// leaks no space (freeOrphans).
//
// Holds live in memory only (a count per inode, under its mu); each holds
// one inode table reference, so an inode with holds is never evicted and
// the count is never lost.

// orphanKey is the key of inode ino's ORPHAN_ITEM. It carries no payload.
func orphanKey(ino Ino) engine.Key {
	return engine.Key{ObjectID: engine.OrphanObjectID, Type: engine.TypeOrphanItem, Offset: uint64(ino)}
}

// orphanLocked reports whether in is an orphan: a file whose last name is
// gone while it has holds, not yet freed (in.mu held).
func (in *inode) orphanLocked() bool {
	return !in.dir && in.item.Nlink == 0 && !in.deleted.Load()
}

// Open takes a hold on file ino and returns its attributes: until the
// matching Release, removing the file's last name keeps its inode and
// data. EISDIR for a directory, ELOOP for a symbolic link (as
// O_NOFOLLOW), ENOENT for an inode that is gone. An orphan (nlink 0) may
// be opened again.
func (s *Store) Open(ino Ino) (Attr, error) {
	a, err := s.open(ino)
	return a, opErr("open", ino, err)
}

func (s *Store) open(ino Ino) (Attr, error) {
	in, err := s.getLive(ino)
	if err != nil {
		return Attr{}, err
	}
	if in.isDir() || in.isLink() {
		// A link is opened as open(2) with O_NOFOLLOW opens one: a client
		// that wants its target resolves the link itself.
		s.itab.put(in)
		if in.isLink() {
			return Attr{}, syscall.ELOOP
		}
		return Attr{}, syscall.EISDIR
	}
	in.mu.Lock()
	deleted := in.deleted.Load()
	var a Attr
	if !deleted {
		// The table reference getLive took stays with the hold.
		in.holds++
		a = in.attrLocked()
	}
	in.mu.Unlock()
	if deleted {
		s.itab.put(in)
		return Attr{}, syscall.ENOENT
	}
	return a, nil
}

// Release drops one hold Open took on ino; the last hold of an orphan
// frees it. EBADF if ino has no hold. The hold is dropped even when
// freeing fails (the orphan item stays, and the next mount frees it).
func (s *Store) Release(ino Ino) error {
	return opErr("release", ino, s.release(ino))
}

func (s *Store) release(ino Ino) error {
	// A held inode is in the table (its hold is a reference): peek finds
	// it, and an inode not there has no hold.
	in := s.itab.peek(ino)
	if in == nil {
		return syscall.EBADF
	}
	held, err := s.releaseLocked(in)
	if held {
		// The hold's table reference, taken by open, goes with it; put
		// after in's locks, as every user of the table.
		s.itab.put(in)
	}
	return err
}

// releaseLocked drops a hold of in under its locks, and frees it if it was
// an orphan's last; held reports whether in had a hold.
func (s *Store) releaseLocked(in *inode) (held bool, err error) {
	in.wbMu.Lock()
	defer in.wbMu.Unlock()
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.holds == 0 {
		return false, syscall.EBADF
	}
	in.holds--
	if in.holds == 0 && in.orphanLocked() {
		return true, s.freeOrphanLocked(in)
	}
	return true, nil
}

// freeOrphanLocked frees orphan in, its last hold gone: its items and
// extents and its orphan item, in one transaction (in.wbMu and mu held).
// A read-only store (degraded since the orphan was made) leaves it for
// the next writable mount.
func (s *Store) freeOrphanLocked(in *inode) (err error) {
	assert.That(in.holds == 0 && in.orphanLocked(), "store: an orphan is freed only at its last release (invariant 15)")
	if err := s.writable(); err != nil {
		return err
	}
	tr, err := s.e.StartReserved(0)
	if err != nil {
		return err
	}
	defer tr.End()
	defer s.abortOnError(&err)
	if err := s.fs.DeleteItem(tr, orphanKey(in.ino)); err != nil {
		return fmt.Errorf("orphan item of inode %d: %w", in.ino, err)
	}
	return s.deleteInode(tr, in)
}

// orphanInode keeps victim, whose last name the running operation removed
// while it has holds: nlink 0, and its orphan item in the same transaction
// (victim.mu held).
func (s *Store) orphanInode(tr *engine.Trans, victim *inode) error {
	assert.That(!victim.dir && victim.holds > 0 && victim.item.Nlink <= 1,
		"store: only a held file's last name makes an orphan (invariant 15)")
	victim.item.Nlink = 0
	if err := s.writeItem(tr, victim); err != nil {
		return err
	}
	return s.fs.InsertItem(tr, orphanKey(victim.ino), nil)
}

// orphans returns the inode numbers the fs tree's orphan items name.
func (s *Store) orphans() ([]Ino, error) {
	var out []Ino
	err := s.fs.Iterate(orphanKey(0), func(k engine.Key, _ []byte) bool {
		if k.ObjectID != engine.OrphanObjectID || k.Type != engine.TypeOrphanItem {
			return false
		}
		out = append(out, Ino(k.Offset))
		return true
	})
	return out, err
}

// freeOrphans frees, at mount (after log replay, before anything else
// changes the tree), every inode an orphan item names — the files that
// were open and unlinked when the store last stopped — and commits: none
// of their space stays taken. An orphan item naming an inode that still
// has a name (damage: no operation writes that) loses the item only. It
// returns how many inodes it freed.
func (s *Store) freeOrphans() (int, error) {
	inos, err := s.orphans()
	if err != nil || len(inos) == 0 {
		return 0, err
	}
	freed := 0
	for _, ino := range inos {
		ok, err := s.freeOrphanAtMount(ino)
		if err != nil {
			return freed, fmt.Errorf("store: freeing orphan inode %d: %w", ino, err)
		}
		if ok {
			freed++
		}
	}
	if _, err := s.e.Commit(s.ctx); err != nil {
		return freed, err
	}
	return freed, nil
}

// freeOrphanAtMount frees orphan ino and its orphan item in one
// transaction; no inode is in memory yet.
func (s *Store) freeOrphanAtMount(ino Ino) (freed bool, err error) {
	tr, err := s.e.Start()
	if err != nil {
		return false, err
	}
	defer tr.End()
	defer s.abortOnError(&err)
	if err := s.fs.DeleteItem(tr, orphanKey(ino)); err != nil {
		return false, err
	}
	b, err := s.fs.Lookup(inodeKey(ino))
	if errors.Is(err, engine.ErrNotFound) {
		return false, nil // log replay deleted it with its last logged name
	}
	if err != nil {
		return false, err
	}
	item, err := engine.DecodeInodeItem(b)
	if err != nil {
		return false, err
	}
	if item.Nlink != 0 || item.Mode&ModeType == ModeDir {
		s.log.Warn("store: an orphan item names an inode with links or a directory; kept the inode, dropped the item",
			"ino", ino, "nlink", item.Nlink, "mode", fmt.Sprintf("%o", item.Mode))
		return false, nil
	}
	if _, err := s.dropExtents(tr, &inode{ino: ino}, 0, ^uint64(0)); err != nil {
		return false, err
	}
	if _, err := s.fs.DeleteRange(tr, engine.InoKey(ino, 0, 0), engine.InoKey(ino, 0xff, ^uint64(0))); err != nil {
		return false, err
	}
	return true, nil
}
