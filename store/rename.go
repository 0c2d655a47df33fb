package store

import (
	"context"
	"errors"
	"syscall"

	"ustore/engine"
)

// renameat2's flags, Linux's RENAME_* values.
const (
	RenameNoReplace = 0x1 // RENAME_NOREPLACE: EEXIST if the new name exists
	RenameExchange  = 0x2 // RENAME_EXCHANGE: swap two existing names
)

// Rename moves srcName in srcDir to dstName in dstDir, atomically: one
// transaction removes the old name, removes and drops whatever dstName
// named (a file; or an empty directory, when the source is one), and adds
// the new name. POSIX's rules: a directory may replace only an empty
// directory (ENOTEMPTY, ENOTDIR), a file only a file (EISDIR), a directory
// never moves under itself (EINVAL), and renaming a name onto another name
// of the same inode does nothing.
//
// renameMu serialises renames, as Linux's s_vfs_rename_mutex: while it is
// held no directory changes parent, so the walk up from dstDir that looks
// for a cycle sees a stable tree. (RenameNoWait's rename of a file within
// one directory, which changes no directory's parent, takes none:
// nowait.go.)
func (s *Store) Rename(srcDir Ino, srcName string, dstDir Ino, dstName string) error {
	return opErr("rename", srcName, s.rename(srcDir, srcName, dstDir, dstName, 0))
}

// Rename2 is Rename with renameat2's flags: RenameNoReplace fails with
// EEXIST if dstName exists, decided under the rename's locks;
// RenameExchange swaps two existing names (ENOENT if either is missing),
// whatever their types, in one transaction (exchange.go). Both flags
// together, or any other, are EINVAL, as Linux answers.
func (s *Store) Rename2(srcDir Ino, srcName string, dstDir Ino, dstName string, flags uint32) error {
	return opErr("rename", srcName, s.rename(srcDir, srcName, dstDir, dstName, flags))
}

func (s *Store) rename(srcDir Ino, srcName string, dstDir Ino, dstName string, flags uint32) error {
	if flags&^(RenameNoReplace|RenameExchange) != 0 || flags == RenameNoReplace|RenameExchange {
		return syscall.EINVAL
	}
	if err := s.writable(); err != nil {
		return err
	}
	if err := checkName(srcName); err != nil {
		return err
	}
	if err := checkName(dstName); err != nil {
		return err
	}
	if err := s.makeRoom(); err != nil {
		return err
	}
	if flags == 0 {
		if err := s.writeBackReplacing(srcDir, srcName, dstDir, dstName); err != nil {
			return err
		}
	}
	s.renameMu.Lock()
	defer s.renameMu.Unlock()
	sd, err := s.getDir(srcDir)
	if err != nil {
		return err
	}
	defer s.itab.put(sd)
	dd, err := s.getDir(dstDir)
	if err != nil {
		return err
	}
	defer s.itab.put(dd)
	for {
		var done bool
		if flags == RenameExchange {
			done, err = s.exchangeOnce(sd, srcName, dd, dstName)
		} else {
			done, err = s.renameOnce(sd, srcName, dd, dstName, flags == RenameNoReplace)
		}
		if done {
			return err
		}
	}
}

// renameOnce looks both names up, takes the locks and, if the names still
// point where they did, renames (done); otherwise it returns done == false.
//
// The locks, in the order taken: victim's wbMu, then every inode's mutex
// (lockAll); the rename's transaction ends before any is released.
//
// With noReplace an existing dstName is EEXIST, even one naming the
// source's inode, as Linux checks it before the same-inode rule; the
// check is renameRecheck's look under the locks, so no create can slip in
// between.
func (s *Store) renameOnce(sd *inode, srcName string, dd *inode, dstName string, noReplace bool) (done bool, err error) {
	se, de, exists, err := s.renameLookup(sd, srcName, dd, dstName)
	if err != nil {
		return true, err
	}
	if exists && de.Child == se.Child && !noReplace {
		return true, nil
	}
	src, err := s.itab.get(se.Child)
	if err != nil {
		return true, err
	}
	defer s.itab.put(src)
	// The walk up from dstDir fails on a deleted dstDir (it has no
	// parent): its error counts only once dstDir is known to be there.
	// An existing name is EEXIST under noReplace before the loop check,
	// as in Linux's do_renameat2 (renameRecheck retries if it went).
	var under error
	if src.isDir() && !(noReplace && exists) {
		under = s.checkNotUnder(dd.ino, src.ino)
	}
	var victim *inode
	locks := []*inode{sd, dd, src}
	if exists {
		victim, err = s.itab.get(de.Child)
		if err != nil {
			return true, err
		}
		defer s.itab.put(victim)
		victim.wbMu.Lock()
		defer victim.wbMu.Unlock()
		locks = append(locks, victim)
	}
	unlock := lockAll(locks...)
	defer unlock()
	r := renameOp{sd: sd, dd: dd, srcName: srcName, dstName: dstName, src: src, victim: victim}
	same, err := s.renameRecheck(&r, se, de, under)
	if err != nil {
		return true, err
	}
	if !same {
		return false, nil
	}
	if noReplace && victim != nil {
		return true, syscall.EEXIST
	}
	if err := s.checkReplace(src, victim); err != nil {
		return true, err
	}
	if err := s.checkRenameRoom(&r); err != nil {
		return true, err
	}
	return true, s.renameInTrans(&r, s.startMeta)
}

// renameOp is one rename, its inodes locked: the two directories, the
// source, and the inode dstName names (victim, nil if none), with the two
// entries as read under the locks.
type renameOp struct {
	sd, dd           *inode
	srcName, dstName string
	src, victim      *inode
	cur, curDst      engine.DirEntry
}

// renameLookup looks both names up without the directories' locks held;
// exists reports whether dstName names anything.
func (s *Store) renameLookup(sd *inode, srcName string, dd *inode, dstName string) (se, de engine.DirEntry, exists bool, err error) {
	se, err = s.findEntryLocked(sd, srcName)
	if err != nil {
		return se, de, false, err
	}
	de, derr := s.findEntryLocked(dd, dstName)
	if derr != nil && !errors.Is(derr, syscall.ENOENT) {
		return se, de, false, derr
	}
	return se, de, derr == nil, nil
}

// renameRecheck looks both names up again under the locks into r.cur and
// r.curDst, and reports whether they still point where renameLookup found
// them (se, and de if r.victim != nil).
func (s *Store) renameRecheck(r *renameOp, se, de engine.DirEntry, under error) (same bool, err error) {
	if r.sd.deleted.Load() || r.dd.deleted.Load() {
		return false, syscall.ENOENT
	}
	if under != nil {
		return false, under
	}
	r.cur, err = s.findEntry(r.sd.ino, r.srcName)
	if err != nil {
		return false, err
	}
	var derr error
	r.curDst, derr = s.findEntry(r.dd.ino, r.dstName)
	if derr != nil && !errors.Is(derr, syscall.ENOENT) {
		return false, derr
	}
	exists := r.victim != nil
	if r.cur.Child != se.Child || (derr == nil) != exists || (exists && r.curDst.Child != de.Child) {
		return false, nil
	}
	return true, nil
}

// checkReplace applies POSIX's rules to src replacing victim (nil if the
// new name is free): a directory only an empty directory, a file only a
// file.
func (s *Store) checkReplace(src, victim *inode) error {
	if victim == nil {
		return nil
	}
	switch {
	case src.isDir() && !victim.isDir():
		return syscall.ENOTDIR
	case !src.isDir() && victim.isDir():
		return syscall.EISDIR
	case victim.isDir():
		empty, err := s.dirEmpty(victim.ino)
		if err != nil {
			return err
		}
		if !empty {
			return syscall.ENOTEMPTY
		}
	}
	return nil
}

// renameInTrans makes the rename's changes in one transaction, its handle
// from start: drop the victim, move the name, write the three inode items.
func (s *Store) renameInTrans(r *renameOp, start func(meta uint64) (*engine.Trans, error)) (err error) {
	tr, err := start(s.opMeta)
	if err != nil {
		return err
	}
	defer tr.End()
	defer s.abortOnError(&err)
	s.track.renamed(tr.ID())
	t := now()
	if r.victim != nil {
		if err := s.renameDropVictim(tr, r, t); err != nil {
			return err
		}
	}
	if err := s.renameMoveEntry(tr, r); err != nil {
		return err
	}
	return s.renameWriteItems(tr, r, t)
}

// renameDropVictim removes dstName and drops the link it held.
func (s *Store) renameDropVictim(tr *engine.Trans, r *renameOp, t engine.Timespec) error {
	if err := s.removeEntry(tr, r.dd.ino, r.dstName, r.curDst); err != nil {
		return err
	}
	r.dd.size--
	if r.victim.isDir() {
		r.dd.item.Nlink--
	}
	return s.dropLink(tr, r.victim, t)
}

// renameMoveEntry removes srcName and adds dstName for the source.
func (s *Store) renameMoveEntry(tr *engine.Trans, r *renameOp) error {
	sd, dd, src := r.sd, r.dd, r.src
	if err := s.removeEntry(tr, sd.ino, r.srcName, r.cur); err != nil {
		return err
	}
	sd.size--
	if err := s.addEntry(tr, dd, r.dstName, src.ino, dtype(src.item.Mode)); err != nil {
		return err
	}
	dd.size++
	if src.isDir() && sd != dd {
		sd.item.Nlink--
		dd.item.Nlink++
	}
	return nil
}

// renameWriteItems stamps and writes the directories' items and the
// source's.
func (s *Store) renameWriteItems(tr *engine.Trans, r *renameOp, t engine.Timespec) error {
	sd, dd := r.sd, r.dd
	for _, d := range []*inode{sd, dd} {
		d.diskSize = d.size
		d.item.Mtime, d.item.Ctime = t, t
	}
	if err := s.writeItem(tr, sd); err != nil {
		return err
	}
	if dd != sd {
		if err := s.writeItem(tr, dd); err != nil {
			return err
		}
	}
	r.src.item.Ctime = t
	return s.writeItem(tr, r.src)
}

// checkRenameRoom checks, before the rename's first change, that the new
// name fits in its hash chain (EOVERFLOW, as btrfs_check_dir_item_collision
// in btrfs_rename) and in src's INODE_REF in dstDir (EMLINK), counting
// what the rename removes from those items first: the replaced name
// (r.victim), and the old name where it shares an item with the new.
func (s *Store) checkRenameRoom(r *renameOp) error {
	sd, dd, src, srcName, dstName, exists := r.sd, r.dd, r.src, r.srcName, r.dstName, r.victim != nil
	var itemDrop, refDrop []string
	if exists {
		itemDrop = append(itemDrop, dstName)
	}
	if sd == dd {
		refDrop = append(refDrop, srcName)
		if nameHash(srcName) == nameHash(dstName) {
			itemDrop = append(itemDrop, srcName)
		}
	}
	if err := s.checkRoom(dirItemKey(dd.ino, dstName), syscall.EOVERFLOW, dstName, itemDrop...); err != nil {
		return err
	}
	return s.checkRoom(refKey(src.ino, dd.ino), syscall.EMLINK, dstName, refDrop...)
}

// checkNotUnder returns EINVAL if directory dir is dirIno itself or lies
// under it: moving ancestor there would cut it from the tree.
func (s *Store) checkNotUnder(dir, ancestor Ino) error {
	for range maxDepth {
		if dir == ancestor {
			return syscall.EINVAL
		}
		if dir == engine.RootDirIno {
			return nil
		}
		p, err := s.parentOf(dir)
		if err != nil {
			return err
		}
		dir = p
	}
	return syscall.ELOOP
}

// maxDepth bounds the walk up the directory tree (a loop means corruption).
const maxDepth = 1 << 16

// writeBackReplacing writes back the source's buffered data when a file is
// renamed over an existing name: the replace-by-rename idiom (write a new
// file, rename it over the old one, no fsync) must not leave an empty or
// short file after a crash, and the tree's size of a file covers only data
// written back (doc.go, invariant 3). Written back before the rename's
// transaction, the data's items are in that transaction or an earlier one,
// so every commit that holds the rename holds them too. ext4 does the same
// (auto_da_alloc), and btrfs (a flush on rename over an existing file).
//
// It runs before renameMu, as fsync's writeback does; data written to the
// source after it is ordinary buffered data again. A lookup that fails is
// left for the rename to report.
func (s *Store) writeBackReplacing(srcDir Ino, srcName string, dstDir Ino, dstName string) error {
	sd, err := s.getDir(srcDir)
	if err != nil {
		return nil
	}
	defer s.itab.put(sd)
	dd, err := s.getDir(dstDir)
	if err != nil {
		return nil
	}
	defer s.itab.put(dd)
	// The new name first: a rename to a free name, the common case, then
	// costs one look-up here.
	de, err := s.findEntryLocked(dd, dstName)
	if err != nil {
		return nil
	}
	se, err := s.findEntryLocked(sd, srcName)
	if err != nil || de.Child == se.Child {
		return nil
	}
	src, err := s.itab.get(se.Child)
	if err != nil {
		return nil
	}
	defer s.itab.put(src)
	if src.isDir() || !src.buffered.Load() {
		return nil
	}
	s.stats.renameWritebacks.Add(1)
	_, err = s.writeData(context.Background(), src)
	return err
}
