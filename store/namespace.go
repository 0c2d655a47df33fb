package store

import (
	"errors"
	"fmt"
	"slices"
	"syscall"

	"ustore/engine"
)

// Namespace operations: each runs in one transaction handle, so a commit
// holds all of an operation or none of it, and each checks everything it
// can before its first change (a failure after the first change would leave
// half an operation in the running transaction; the engine fails the
// transaction's commit rather than write it).

// writeItem writes in's item to the tree in tr (in.mu held) and records tr
// as the inode's last change.
func (s *Store) writeItem(tr *engine.Trans, in *inode) error {
	it := in.item
	it.Size = in.diskSize
	it.Transid = tr.ID()
	if err := s.fs.UpdateItem(tr, inodeKey(in.ino), func(b []byte) { it.Encode(b[:0]) }); err != nil {
		return err
	}
	in.item.Transid = tr.ID()
	in.lastTrans.Store(tr.ID())
	in.changes.Add(1)
	return nil
}

// startMeta starts the handle of an operation that may need meta bytes of
// new tree nodes (engine.StartReserved), refusing it with ENOSPC unless that
// much is available beyond the space promised to buffered data: an
// operation must not take the room the writeback of accepted writes needs.
func (s *Store) startMeta(meta uint64) (*engine.Trans, error) {
	if err := s.promisedRoom(meta); err != nil {
		return nil, err
	}
	return s.e.StartReserved(meta)
}

// promisedRoom is startMeta's own check: ENOSPC unless meta bytes are
// available beyond the space promised to buffered data.
func (s *Store) promisedRoom(meta uint64) error {
	if meta == 0 {
		return nil
	}
	if avail, promised := s.e.Space().Available, uint64(s.wb.reservedBytes()); avail < promised+meta {
		return fmt.Errorf("%w: %d bytes available, %d promised to buffered data, the operation may need %d",
			engine.ErrNoSpace, avail, promised, meta)
	}
	return nil
}

// metaRoom is the check startMeta makes, its own and the engine's, for an
// operation that joins a handle already started (a create batch's,
// create_batch.go).
func (s *Store) metaRoom(meta uint64) error {
	if err := s.promisedRoom(meta); err != nil {
		return err
	}
	return s.e.MetaRoom(meta)
}

// makeRoom commits when startMeta would refuse an operation and a commit
// would unpin space that earlier transactions freed (an unlink's). Called
// before any inode lock is taken: a commit waits for every handle.
func (s *Store) makeRoom() error {
	if s.e.Space().Available >= s.opMeta+uint64(s.wb.reservedBytes()) {
		return nil
	}
	_, err := s.commitToUnpin()
	return err
}

// commitToUnpin commits if transactions not yet durable have freed space:
// a commit makes it allocatable. It reports whether it committed. The
// caller holds no transaction handle and no inode lock a handle holder may
// wait for (a commit waits for every handle).
func (s *Store) commitToUnpin() (bool, error) {
	if s.e.Space().Pinned == 0 {
		return false, nil
	}
	_, err := s.e.Commit(s.ctx)
	return true, err
}

// lockAll locks the inodes' mu in ascending ino order (each once).
func lockAll(ins ...*inode) func() {
	sorted := slices.Clone(ins)
	slices.SortFunc(sorted, func(a, b *inode) int {
		switch {
		case a.ino < b.ino:
			return -1
		case a.ino > b.ino:
			return 1
		}
		return 0
	})
	sorted = slices.CompactFunc(sorted, func(a, b *inode) bool { return a == b })
	for _, in := range sorted {
		in.mu.Lock()
	}
	return func() {
		for _, in := range sorted {
			in.mu.Unlock()
		}
	}
}

// getLive returns inode ino with a reference; ENOENT if it is deleted. A
// deleted inode may stay in the table until evicted: it must answer as one
// not there (as it does once evicted), before any check of its type.
func (s *Store) getLive(ino Ino) (*inode, error) {
	in, err := s.itab.get(ino)
	if err != nil {
		return nil, err
	}
	in.mu.Lock()
	deleted := in.deleted.Load()
	in.mu.Unlock()
	if deleted {
		s.itab.put(in)
		return nil, syscall.ENOENT
	}
	return in, nil
}

// getDirToCreate is getDir for a create: its deleted flag is one atomic
// load, not read under mu, so that a create does not wait for the lock
// its directory's create queue leader holds across a pass
// (create_batch.go). The answer is early only: the create reads the flag
// again under mu before its first change (makeInodeLocked,
// createBatchLocked), and a directory deleted in between gives ENOENT
// there.
func (s *Store) getDirToCreate(ino Ino) (*inode, error) {
	in, err := s.itab.get(ino)
	if err != nil {
		return nil, err
	}
	switch {
	case in.deleted.Load():
		err = syscall.ENOENT
	case !in.isDir():
		err = syscall.ENOTDIR
	default:
		return in, nil
	}
	s.itab.put(in)
	return nil, err
}

// getDir returns directory ino with a reference: ENOTDIR if it is not one.
func (s *Store) getDir(ino Ino) (*inode, error) {
	in, err := s.getLive(ino)
	if err != nil {
		return nil, err
	}
	if !in.isDir() {
		s.itab.put(in)
		return nil, syscall.ENOTDIR
	}
	return in, nil
}

// Lookup returns the attributes of name in directory dir.
func (s *Store) Lookup(dir Ino, name string) (Attr, error) {
	a, err := s.lookup(dir, name)
	return a, opErr("lookup", name, err)
}

func (s *Store) lookup(dir Ino, name string) (Attr, error) {
	if err := checkName(name); err != nil {
		return Attr{}, err
	}
	d, err := s.getDir(dir)
	if err != nil {
		return Attr{}, err
	}
	defer s.itab.put(d)
	// The child may go between finding the name and the stat (a rename
	// over the name, an unlink): the name then names another inode, or
	// none. Look again rather than fail a name that exists throughout.
	for prev := Ino(0); ; {
		e, err := s.findEntryLocked(d, name)
		if err != nil {
			return Attr{}, err
		}
		a, err := s.stat(e.Child)
		if !errors.Is(err, syscall.ENOENT) || e.Child == prev {
			return a, err
		}
		prev = e.Child
	}
}

// Create makes a regular file name in dir with permission bits perm;
// EEXIST if the name exists.
func (s *Store) Create(dir Ino, name string, perm uint32) (Attr, error) {
	a, err := s.makeInode(dir, name, ModeFile|perm&ModePerm, "")
	return a, opErr("create", name, err)
}

// Mkdir makes a directory name in dir.
func (s *Store) Mkdir(dir Ino, name string, perm uint32) (Attr, error) {
	a, err := s.makeInode(dir, name, ModeDir|perm&ModePerm, "")
	return a, opErr("mkdir", name, err)
}

// makeInode makes an inode of mode named name in dir; a symbolic link's
// target (checked by the caller) is its inline extent, in the same
// transaction.
func (s *Store) makeInode(dir Ino, name string, mode uint32, target string) (Attr, error) {
	if err := s.writable(); err != nil {
		return Attr{}, err
	}
	if err := checkName(name); err != nil {
		return Attr{}, err
	}
	if err := s.makeRoom(); err != nil {
		return Attr{}, err
	}
	d, err := s.getDirToCreate(dir)
	if err != nil {
		return Attr{}, err
	}
	defer s.itab.put(d)
	// Through d's create queue: made alone, or in a batch with the
	// creates of d in progress with it (create_batch.go).
	return s.queueCreate(d, &createReq{name: name, mode: mode, target: target})
}

// makeInodeLocked is makeInode in directory d, whose mu the caller holds;
// start starts the transaction handle (startMeta, or tryStartMeta for a
// caller that must not wait).
func (s *Store) makeInodeLocked(d *inode, name string, mode uint32, target string,
	start func(meta uint64) (*engine.Trans, error)) (_ Attr, err error) {
	if d.deleted.Load() {
		return Attr{}, syscall.ENOENT
	}
	size, err := s.nameFree(d, name)
	if err != nil {
		return Attr{}, err
	}
	// The new inode's INODE_REF holds this one name: it always fits
	// (engine/fs_items.go asserts it).
	tr, err := start(s.opMeta)
	if err != nil {
		return Attr{}, err
	}
	defer tr.End()
	defer s.abortOnError(&err)
	t := now()
	in, err := s.insertInode(tr, d, name, mode, target, size, s.nextIno.take(), t)
	if err != nil {
		return Attr{}, err
	}
	d.item.Mtime, d.item.Ctime = t, t
	if err := s.writeItem(tr, d); err != nil {
		return Attr{}, err
	}
	return s.addNewInode(in), nil
}

// nameFree checks that d (mu held) may take the new name name: EEXIST
// if it is there, EOVERFLOW if the DIR_ITEM of its hash has no room for
// it. It returns that item's size, 0 if there is none.
func (s *Store) nameFree(d *inode, name string) (int, error) {
	_, size, err := s.dirItem(d.ino, name)
	if err == nil {
		return 0, syscall.EEXIST
	} else if !errors.Is(err, syscall.ENOENT) {
		return 0, err
	}
	return size, s.roomFor(size, name, syscall.EOVERFLOW)
}

// insertInode puts a new inode ino of mode, named name in d, in tr: its
// items and its entry in d, d's size and link count in memory (d.mu
// held; name absent, size the DIR_ITEM of its hash as a search under d.mu
// found it). The caller writes d's item (with its times, t) and then adds
// the inode to the table (addNewInode); a failure here is after the
// first tree change.
func (s *Store) insertInode(tr *engine.Trans, d *inode, name string, mode uint32, target string,
	size int, ino Ino, t engine.Timespec) (*inode, error) {
	item := engine.InodeItem{Generation: tr.ID(), Transid: tr.ID(), Mode: mode, Nlink: 1,
		UID: s.uid, GID: s.gid, Atime: t, Mtime: t, Ctime: t, Otime: t}
	if mode&ModeType == ModeDir {
		item.Nlink = 2
	}
	if mode&ModeType == ModeLink {
		item.Size, item.Nbytes = uint64(len(target)), uint64(len(target))
	}
	in := newInodeOf(ino, item)
	in.nextIndex = 2
	// The new inode's items — its inode item, its INODE_REF in d, a
	// symbolic link's target — are all the tree holds of it, consecutive
	// keys: one batch, one descent.
	s.track.itemGrown(tr.ID(), refKey(ino, d.ino), engine.DirEntrySize(len(name)), s.e.ItemDataMax())
	if err := s.fs.InsertItems(tr, newInodeBatch(tr, in, d, name, target)); err != nil {
		return nil, err
	}
	in.lastTrans.Store(tr.ID())
	// Under d.mu since the search: no item of name's hash if size is 0.
	if err := s.addEntryKnown(tr, d, name, ino, dtype(mode), size == 0, true); err != nil {
		return nil, err
	}
	d.size++
	d.diskSize = d.size
	if mode&ModeType == ModeDir {
		d.item.Nlink++
	}
	return in, nil
}

// addNewInode adds in, just made and its transaction's changes all done,
// to the table, and returns its attributes.
func (s *Store) addNewInode(in *inode) Attr {
	s.itab.add(in)
	defer s.itab.put(in)
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.attrLocked()
}

// newInodeBatch is the batch of a new inode's items: its inode item, its
// INODE_REF in d (named name, at d's next index) and a symbolic link's
// target, their payloads encoded into one buffer back to front as
// ItemBatch holds them (three allocations, not NewItemBatch's copy).
func newInodeBatch(tr *engine.Trans, in *inode, d *inode, name, target string) engine.ItemBatch {
	refSize := engine.DirEntrySize(len(name))
	b := engine.ItemBatch{
		Keys:      make([]engine.Key, 2, 3),
		DataSizes: make([]uint32, 2, 3),
		Count:     2,
	}
	b.Keys[0], b.Keys[1] = inodeKey(in.ino), refKey(in.ino, d.ino)
	b.DataSizes[0], b.DataSizes[1] = engine.InodeItemSize, uint32(refSize)
	var data []byte
	if in.isLink() {
		x := targetExtent(tr, target)
		b.Keys = append(b.Keys, extentKey(in.ino, 0))
		b.DataSizes = append(b.DataSizes, uint32(len(x)))
		b.Count++
		data = make([]byte, 0, len(x)+refSize+engine.InodeItemSize)
		data = append(data, x...)
	} else {
		data = make([]byte, 0, refSize+engine.InodeItemSize)
	}
	data = engine.EncodeDirEntries(data, newRef(d, name))
	data = in.item.Encode(data)
	b.Data, b.TotalDataSize = data, uint32(len(data))
	return b
}

// Link gives inode ino the name name in dir. Directories cannot be linked
// (EPERM, as Linux); files and symbolic links can.
func (s *Store) Link(ino, dir Ino, name string) (Attr, error) {
	a, err := s.link(ino, dir, name)
	return a, opErr("link", name, err)
}

func (s *Store) link(ino, dir Ino, name string) (_ Attr, err error) {
	if err := s.writable(); err != nil {
		return Attr{}, err
	}
	if err := checkName(name); err != nil {
		return Attr{}, err
	}
	if err := s.makeRoom(); err != nil {
		return Attr{}, err
	}
	d, err := s.getDir(dir)
	if err != nil {
		return Attr{}, err
	}
	defer s.itab.put(d)
	in, err := s.getLive(ino)
	if err != nil {
		return Attr{}, err
	}
	defer s.itab.put(in)
	if in.isDir() {
		return Attr{}, syscall.EPERM
	}
	unlock := lockAll(d, in)
	defer unlock()
	// An orphan gets no name back (Linux: ENOENT for linkat of an
	// unlinked file).
	if d.deleted.Load() || in.deleted.Load() || in.orphanLocked() {
		return Attr{}, syscall.ENOENT
	}
	if in.item.Nlink >= linkMax {
		return Attr{}, syscall.EMLINK
	}
	_, size, err := s.dirItem(dir, name)
	if err == nil {
		return Attr{}, syscall.EEXIST
	} else if !errors.Is(err, syscall.ENOENT) {
		return Attr{}, err
	}
	// As btrfs: the inode ref first (EMLINK), then the hash chain.
	if err := s.checkRoom(refKey(ino, dir), syscall.EMLINK, name); err != nil {
		return Attr{}, err
	}
	if err := s.roomFor(size, name, syscall.EOVERFLOW); err != nil {
		return Attr{}, err
	}
	tr, err := s.startMeta(s.opMeta)
	if err != nil {
		return Attr{}, err
	}
	defer tr.End()
	defer s.abortOnError(&err)
	if err := s.addEntry(tr, d, name, ino, dtype(in.item.Mode)); err != nil {
		return Attr{}, err
	}
	t := now()
	d.size++
	d.diskSize = d.size
	d.item.Mtime, d.item.Ctime = t, t
	if err := s.writeItem(tr, d); err != nil {
		return Attr{}, err
	}
	in.item.Nlink++
	in.item.Ctime = t
	if err := s.writeItem(tr, in); err != nil {
		return Attr{}, err
	}
	return in.attrLocked(), nil
}

// linkMax bounds a file's names: nlink is a u32 on disk. The names one
// directory holds are bounded by their INODE_REF's room (name_room.go).
const linkMax = 1 << 16

// Unlink removes name, a non-directory, from dir; the inode goes with its
// last name.
func (s *Store) Unlink(dir Ino, name string) error {
	return opErr("unlink", name, s.remove(dir, name, false))
}

// Rmdir removes name, an empty directory, from dir.
func (s *Store) Rmdir(dir Ino, name string) error {
	return opErr("rmdir", name, s.remove(dir, name, true))
}

func (s *Store) remove(dir Ino, name string, wantDir bool) error {
	if err := s.writable(); err != nil {
		return err
	}
	if err := checkName(name); err != nil {
		return err
	}
	// A remove may use the reserve for its nodes; many in one transaction
	// on a full device would exhaust it. Commit first when space is short.
	if err := s.makeRoom(); err != nil {
		return err
	}
	d, err := s.getDir(dir)
	if err != nil {
		return err
	}
	defer s.itab.put(d)
	for {
		e, err := s.findEntryLocked(d, name)
		if err != nil {
			return err
		}
		victim, err := s.itab.get(e.Child)
		if err != nil {
			return err
		}
		done, err := s.removeLocked(d, name, e, victim, wantDir)
		s.itab.put(victim)
		if done {
			return err
		}
	}
}

// findEntryLocked looks name up in d under d.mu.
func (s *Store) findEntryLocked(d *inode, name string) (engine.DirEntry, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.deleted.Load() {
		return engine.DirEntry{}, syscall.ENOENT
	}
	return s.findEntry(d.ino, name)
}

// removeLocked takes the locks, checks that name still points at victim
// (done == false: it changed, look again), and removes it.
func (s *Store) removeLocked(d *inode, name string, e engine.DirEntry, victim *inode, wantDir bool) (done bool, err error) {
	victim.wbMu.Lock()
	defer victim.wbMu.Unlock()
	unlock := lockAll(d, victim)
	defer unlock()
	return s.removeHeld(d, name, e, victim, wantDir, s.e.StartReserved, nil)
}

// nameFound is a name's entry and the size of the DIR_ITEM of its hash,
// as a search under the directory's mu found them (dirItem).
type nameFound struct {
	e        engine.DirEntry
	itemSize int
}

// removeHeld is removeLocked with d.mu, victim.wbMu and victim.mu held;
// start starts the transaction handle (StartReserved, or TryStartReserved
// for a caller that must not wait). held is name's entry as found under
// the d.mu the caller has held since (UnlinkNoWait's), so not searched for
// again; nil: the name is looked up again, under the lock.
func (s *Store) removeHeld(d *inode, name string, e engine.DirEntry, victim *inode, wantDir bool,
	start func(meta uint64) (*engine.Trans, error), held *nameFound) (done bool, err error) {
	if d.deleted.Load() {
		return true, syscall.ENOENT
	}
	if held == nil {
		cur, size, err := s.dirItem(d.ino, name)
		if err != nil {
			return true, err
		}
		held = &nameFound{cur, size}
	}
	cur := held.e
	if cur.Child != e.Child {
		return false, nil
	}
	switch {
	case wantDir && !victim.isDir():
		return true, syscall.ENOTDIR
	case !wantDir && victim.isDir():
		return true, syscall.EISDIR
	case wantDir:
		empty, err := s.dirEmpty(victim.ino)
		if err != nil {
			return true, err
		}
		if !empty {
			return true, syscall.ENOTEMPTY
		}
	}
	tr, err := start(0)
	if err != nil {
		return true, err
	}
	defer tr.End()
	defer s.abortOnError(&err)
	if err := s.removeName(tr, d.ino, name, cur, held.itemSize, victim.goesWithName()); err != nil {
		return true, err
	}
	t := now()
	d.size--
	d.diskSize = d.size
	if victim.isDir() {
		d.item.Nlink--
	}
	d.item.Mtime, d.item.Ctime = t, t
	if err := s.writeItem(tr, d); err != nil {
		return true, err
	}
	return true, s.dropLink(tr, victim, t)
}

// goesWithName reports whether dropLink deletes the inode when the name
// being removed goes (mu held): a directory, or a file's last name while
// nothing holds it open. Its items go then, the INODE_REF with them.
func (in *inode) goesWithName() bool {
	return in.isDir() || in.item.Nlink <= 1 && in.holds == 0
}

// dropLink lowers victim's link count after one of its names went, and
// deletes it with its last — or, if it is held open, keeps it as an
// orphan (orphan.go) (victim.wbMu and mu held).
func (s *Store) dropLink(tr *engine.Trans, victim *inode, t engine.Timespec) error {
	victim.item.Ctime = t
	if victim.goesWithName() {
		return s.deleteInode(tr, victim)
	}
	if !victim.isDir() && victim.item.Nlink <= 1 {
		return s.orphanInode(tr, victim)
	}
	victim.item.Nlink--
	return s.writeItem(tr, victim)
}

// deleteInode frees an inode's data and deletes its items (its names are
// already gone). Its buffered pages are dropped whole.
func (s *Store) deleteInode(tr *engine.Trans, in *inode) error {
	in.extMu.Lock()
	defer in.extMu.Unlock()
	if _, err := s.dropExtents(tr, in, 0, ^uint64(0)); err != nil {
		return err
	}
	lo := engine.InoKey(in.ino, 0, 0)
	hi := engine.InoKey(in.ino, 0xff, ^uint64(0))
	if _, err := s.fs.DeleteRange(tr, lo, hi); err != nil {
		return err
	}
	in.deleted.Store(true)
	in.item.Nlink = 0
	in.lastTrans.Store(tr.ID())
	s.dropPages(in, 0)
	return nil
}
