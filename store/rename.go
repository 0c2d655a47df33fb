package store

import (
	"context"
	"errors"
	"syscall"

	"ustore/engine"
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
// for a cycle sees a stable tree.
func (s *Store) Rename(srcDir uint64, srcName string, dstDir uint64, dstName string) error {
	return opErr("rename", srcName, s.rename(srcDir, srcName, dstDir, dstName))
}

func (s *Store) rename(srcDir uint64, srcName string, dstDir uint64, dstName string) error {
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
	if err := s.writeBackReplacing(srcDir, srcName, dstDir, dstName); err != nil {
		return err
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
		done, err := s.renameOnce(sd, srcName, dd, dstName)
		if done {
			return err
		}
	}
}

// renameOnce looks both names up, takes the locks and, if the names still
// point where they did, renames (done); otherwise it returns done == false.
func (s *Store) renameOnce(sd *inode, srcName string, dd *inode, dstName string) (done bool, err error) {
	se, err := s.findEntryLocked(sd, srcName)
	if err != nil {
		return true, err
	}
	de, derr := s.findEntryLocked(dd, dstName)
	if derr != nil && !errors.Is(derr, syscall.ENOENT) {
		return true, derr
	}
	exists := derr == nil
	if exists && de.Child == se.Child {
		return true, nil
	}
	src, err := s.itab.get(se.Child)
	if err != nil {
		return true, err
	}
	defer s.itab.put(src)
	// The walk up from dstDir fails on a deleted dstDir (it has no
	// parent): its error counts only once dstDir is known to be there.
	var under error
	if src.isDir() {
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
	if sd.deleted.Load() || dd.deleted.Load() {
		return true, syscall.ENOENT
	}
	if under != nil {
		return true, under
	}
	cur, err := s.findEntry(sd.ino, srcName)
	if err != nil {
		return true, err
	}
	curDst, derr := s.findEntry(dd.ino, dstName)
	if derr != nil && !errors.Is(derr, syscall.ENOENT) {
		return true, derr
	}
	if cur.Child != se.Child || (derr == nil) != exists || (exists && curDst.Child != de.Child) {
		return false, nil
	}
	if victim != nil {
		switch {
		case src.isDir() && !victim.isDir():
			return true, syscall.ENOTDIR
		case !src.isDir() && victim.isDir():
			return true, syscall.EISDIR
		case victim.isDir():
			empty, err := s.dirEmpty(victim.ino)
			if err != nil {
				return true, err
			}
			if !empty {
				return true, syscall.ENOTEMPTY
			}
		}
	}
	if err := s.checkRenameRoom(sd, srcName, dd, dstName, src, exists); err != nil {
		return true, err
	}
	tr, err := s.startMeta(s.opMeta)
	if err != nil {
		return true, err
	}
	defer tr.End()
	defer s.abortOnError(&err)
	s.track.renamed(tr.ID())
	t := now()
	if victim != nil {
		if err := s.removeEntry(tr, dd.ino, dstName, curDst); err != nil {
			return true, err
		}
		dd.size--
		if victim.isDir() {
			dd.item.Nlink--
		}
		if err := s.dropLink(tr, victim, t); err != nil {
			return true, err
		}
	}
	if err := s.removeEntry(tr, sd.ino, srcName, cur); err != nil {
		return true, err
	}
	sd.size--
	if err := s.addEntry(tr, dd, dstName, src.ino, dtype(src.item.Mode)); err != nil {
		return true, err
	}
	dd.size++
	if src.isDir() && sd != dd {
		sd.item.Nlink--
		dd.item.Nlink++
	}
	for _, d := range []*inode{sd, dd} {
		d.diskSize = d.size
		d.item.Mtime, d.item.Ctime = t, t
	}
	if err := s.writeItem(tr, sd); err != nil {
		return true, err
	}
	if dd != sd {
		if err := s.writeItem(tr, dd); err != nil {
			return true, err
		}
	}
	src.item.Ctime = t
	return true, s.writeItem(tr, src)
}

// checkRenameRoom checks, before the rename's first change, that the new
// name fits in its hash chain (EOVERFLOW, as btrfs_check_dir_item_collision
// in btrfs_rename) and in src's INODE_REF in dstDir (EMLINK), counting
// what the rename removes from those items first: the replaced name
// (exists), and the old name where it shares an item with the new.
func (s *Store) checkRenameRoom(sd *inode, srcName string, dd *inode, dstName string, src *inode, exists bool) error {
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
func (s *Store) checkNotUnder(dir, ancestor uint64) error {
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
func (s *Store) writeBackReplacing(srcDir uint64, srcName string, dstDir uint64, dstName string) error {
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
	se, err := s.findEntryLocked(sd, srcName)
	if err != nil {
		return nil
	}
	de, err := s.findEntryLocked(dd, dstName)
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
	return s.writeData(context.Background(), src)
}
