package store

import (
	"errors"
	"syscall"

	"ustore/engine"
	"ustore/journal"
)

// Namespace operations for a caller that must not wait: the server's
// connection reader, which serves a create, a mkdir, an unlink, an rmdir
// or a rename itself when the store can make it without waiting
// (server/conn_inline.go), and hands it to a worker otherwise — as
// ReadCached does for reads.
//
// CreateNoWait, MkdirNoWait, UnlinkNoWait, RmdirNoWait and RenameNoWait
// are Create, Mkdir, Unlink, Rmdir and Rename, except that where those
// would wait they return ErrWouldWait at once, having changed nothing:
// every check that may decline comes before the transaction handle
// starts, and the handle's start is the last of them. They decline when
//   - the directory (or, for an unlink or an rmdir, the victim; for a
//     rename, the source) is not in the inode table: loading it reads
//     the device;
//   - a lock they need is held (TryLock): its holder may keep it across
//     I/O (a writeback holds a file's wbMu, an fsync a directory's mu);
//   - space is short: the waiting ones would first commit to unpin what
//     earlier transactions freed (makeRoom), or might answer ENOSPC;
//   - the running transaction is frozen for its commit and another
//     handle is still open (engine.TryStartReserved): Start would wait
//     for that handle;
//   - for an unlink, the victim is anything but an empty regular file
//     with no buffered pages and no open holds: freeing extents or making
//     an orphan is more than one short transaction's work; for an rmdir,
//     the victim is not a directory (Rmdir answers ENOTDIR);
//   - for a rename, the new name exists (a rename over a name may write
//     back the source's data first and drops the victim), the source is a
//     directory (the walk up for a cycle may read the device), renameMu
//     is held for a rename to another directory (another rename, or an
//     fsync logging names), or flags other than RenameNoReplace are given;
//   - anything else out of the common path (a name that does not parse,
//     a directory that is not one): the worker gives the answer.
// Once the handle has started they finish as the waiting ones do, and their answers are the same: an error then is the operation's own
// (EEXIST, ENOENT, …). What they do not avoid is what the inline stat and
// lookup do not avoid either: a tree node that is not in the node cache
// is read from the device, a tree lock another writer holds is waited
// for (writers hold those for a node's change, not across a commit), and
// the inode table's shard lock, which a load of another inode of the
// shard holds across its read, is taken to add the new inode.
//
// None takes a reference on an inode: with the inode's mu held, the
// table does not evict it (inodeTable.evictLocked), and they check that
// the inode they peeked is the table's before they use it (ReadCached's
// rule).

// ErrWouldWait is a NoWait entry point's refusal: the operation would
// have had to wait, and nothing was changed. Call the waiting one.
var ErrWouldWait = errors.New("store: the operation would wait")

// CreateNoWait is Create for a caller that must not wait: ErrWouldWait
// where Create would (see above).
func (s *Store) CreateNoWait(dir Ino, name string, perm uint32) (Attr, error) {
	return s.makeNoWait("create", dir, name, ModeFile|perm&ModePerm)
}

// MkdirNoWait is Mkdir for a caller that must not wait: ErrWouldWait where
// Mkdir would (see above).
func (s *Store) MkdirNoWait(dir Ino, name string, perm uint32) (Attr, error) {
	return s.makeNoWait("mkdir", dir, name, ModeDir|perm&ModePerm)
}

// makeNoWait is makeInode without a wait, for CreateNoWait and MkdirNoWait.
func (s *Store) makeNoWait(op string, dir Ino, name string, mode uint32) (Attr, error) {
	if s.writable() != nil || checkName(name) != nil || !s.roomWithoutCommit() {
		return Attr{}, ErrWouldWait
	}
	d := s.peekLocked(dir)
	if d == nil {
		return Attr{}, ErrWouldWait
	}
	defer d.mu.Unlock()
	// A create queue's leader waits for d.mu (or holds it across a
	// pass); its waiters must not be overtaken either.
	if !d.isDir() || d.deleted.Load() || s.creates.active(d.ino) {
		return Attr{}, ErrWouldWait
	}
	a, err := s.makeInodeLocked(d, name, mode, "", s.tryStartMeta)
	if errors.Is(err, ErrWouldWait) {
		return Attr{}, err
	}
	return a, opErr(op, name, err)
}

// UnlinkNoWait is Unlink for a caller that must not wait: ErrWouldWait
// where Unlink would (see above).
func (s *Store) UnlinkNoWait(dir Ino, name string) error {
	return s.removeNoWait("unlink", dir, name, false)
}

// RmdirNoWait is Rmdir for a caller that must not wait: ErrWouldWait where
// Rmdir would (see above). A directory that is not empty is Rmdir's own
// answer, ENOTEMPTY, once the checks have passed.
func (s *Store) RmdirNoWait(dir Ino, name string) error {
	return s.removeNoWait("rmdir", dir, name, true)
}

// removeNoWait is remove without a wait, for UnlinkNoWait (wantDir false:
// an empty regular file) and RmdirNoWait (a directory).
func (s *Store) removeNoWait(op string, dir Ino, name string, wantDir bool) error {
	if s.writable() != nil || checkName(name) != nil || !s.roomWithoutCommit() {
		return ErrWouldWait
	}
	d := s.peekLocked(dir)
	if d == nil {
		return ErrWouldWait
	}
	defer d.mu.Unlock()
	if !d.isDir() || d.deleted.Load() {
		return ErrWouldWait
	}
	e, size, err := s.dirItem(d.ino, name)
	if err != nil {
		// ENOENT, or the tree's error: Unlink's answer too, but Unlink
		// gives it with its own checks first.
		return ErrWouldWait
	}
	victim := s.itab.peek(e.Child)
	if victim == nil || victim == d || !victim.wbMu.TryLock() {
		return ErrWouldWait
	}
	defer victim.wbMu.Unlock()
	if !victim.mu.TryLock() {
		return ErrWouldWait
	}
	defer victim.mu.Unlock()
	if s.itab.peek(e.Child) != victim || victim.deleted.Load() {
		return ErrWouldWait
	}
	if wantDir {
		// A directory's items are its inode item, its INODE_REF and, when
		// it is empty, nothing else: one short transaction, whatever its
		// holds (a directory goes with its name, goesWithName).
		if !victim.isDir() {
			return ErrWouldWait
		}
	} else if victim.isDir() || victim.isLink() || victim.size != 0 || victim.diskSize != 0 ||
		!victim.pages.empty() || victim.holds > 0 {
		return ErrWouldWait
	}
	_, err = s.removeHeld(d, name, e, victim, wantDir, s.tryStart, &nameFound{e, size})
	if errors.Is(err, ErrWouldWait) {
		return err
	}
	return opErr(op, name, err)
}

// RenameNoWait is Rename (Rename2 with flags RenameNoReplace) for a
// caller that must not wait: ErrWouldWait where Rename would (see above).
// It makes only the common rename — a file or a symlink to a name that does
// not exist, in the same directory or another — and declines the rest,
// which the worker's Rename answers (ENOENT for a missing source
// included).
func (s *Store) RenameNoWait(srcDir Ino, srcName string, dstDir Ino, dstName string, flags uint32) error {
	if flags&^RenameNoReplace != 0 || s.writable() != nil || checkName(srcName) != nil || checkName(dstName) != nil ||
		!s.roomWithoutCommit() {
		return ErrWouldWait
	}
	// Rename's order (renameMu, then inodes' mu): every lock below is
	// tried, never waited for, so the order among them cannot deadlock.
	//
	// Within one directory, the rename of anything but a directory (the
	// only kind made here) changes no directory's parent, so it needs no
	// renameMu, as Linux's lock_rename takes s_vfs_rename_mutex only for
	// two parents: the cycle check it guards is a directory's, and fsync's
	// logging, which holds it read, also holds the mu of the inode it logs,
	// which a rename of that inode or in that directory takes too — as a
	// link or an unlink does, which take no renameMu either. Renames in
	// one directory then serialise on its mu alone, not on every rename
	// in the store (64 clients renaming in one directory declined 71 % of
	// their tries on renameMu when this took it).
	if srcDir != dstDir {
		if !s.renameMu.TryLock() {
			return ErrWouldWait
		}
		defer s.renameMu.Unlock()
	}
	sd := s.peekLocked(srcDir)
	if sd == nil {
		return ErrWouldWait
	}
	defer sd.mu.Unlock()
	dd := sd
	if dstDir != srcDir {
		if dd = s.peekLocked(dstDir); dd == nil {
			return ErrWouldWait
		}
		defer dd.mu.Unlock()
	}
	// A create queue's waiters must not be overtaken (CreateNoWait).
	for _, d := range []*inode{sd, dd} {
		if !d.isDir() || d.deleted.Load() || s.creates.active(d.ino) {
			return ErrWouldWait
		}
	}
	se, err := s.findEntry(sd.ino, srcName)
	if err != nil {
		return ErrWouldWait
	}
	if _, err := s.findEntry(dd.ino, dstName); !errors.Is(err, syscall.ENOENT) {
		return ErrWouldWait
	}
	src := s.itab.peek(se.Child)
	if src == nil || src == sd || src == dd || !src.mu.TryLock() {
		return ErrWouldWait
	}
	defer src.mu.Unlock()
	if s.itab.peek(se.Child) != src || src.deleted.Load() || src.isDir() {
		return ErrWouldWait
	}
	r := renameOp{sd: sd, dd: dd, srcName: srcName, dstName: dstName, src: src, cur: se}
	if s.checkRenameRoom(&r) != nil {
		// EOVERFLOW or EMLINK: Rename's own checks give it.
		return ErrWouldWait
	}
	err = s.renameInTrans(&r, s.tryStartMeta)
	if errors.Is(err, ErrWouldWait) {
		return err
	}
	return opErr("rename", srcName, err)
}

// peekLocked returns inode ino with its mu held if it is in the table and
// its mu is free; nil otherwise. The table does not evict an inode whose
// mu is held, so it stays the table's until mu is given back.
func (s *Store) peekLocked(ino Ino) *inode {
	in := s.itab.peek(ino)
	if in == nil || !in.mu.TryLock() {
		return nil
	}
	if s.itab.peek(ino) != in {
		// Evicted (and perhaps loaded again) since the peek.
		in.mu.Unlock()
		return nil
	}
	return in
}

// roomWithoutCommit reports whether an operation may start without the
// commit makeRoom would make first.
func (s *Store) roomWithoutCommit() bool {
	return s.e.Space().Available >= s.opMeta+uint64(s.wb.reservedBytes())
}

// tryStartMeta is startMeta without a wait: ErrWouldWait where the
// journal would wait, and where startMeta would refuse with ENOSPC (the
// waiting path commits to unpin first).
func (s *Store) tryStartMeta(meta uint64) (*engine.Trans, error) {
	if s.promisedRoom(meta) != nil {
		return nil, ErrWouldWait
	}
	return s.tryStart(meta)
}

// tryStart is engine.TryStartReserved with its refusals as ErrWouldWait.
func (s *Store) tryStart(meta uint64) (*engine.Trans, error) {
	tr, err := s.e.TryStartReserved(meta)
	if errors.Is(err, journal.ErrWouldWait) || errors.Is(err, engine.ErrNoSpace) {
		return nil, ErrWouldWait
	}
	return tr, err
}
