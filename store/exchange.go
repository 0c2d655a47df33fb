package store

import "syscall"

// exchangeOnce is one try of RENAME_EXCHANGE (renameMu held): srcName in
// sd and dstName in dd swap the inodes they name, in one transaction —
// file or directory either of them, in one directory or two. A directory
// that changes parent gets its '..' (its one INODE_REF) in the other
// directory, and the two directories' link counts follow their
// subdirectories; neither directory's size changes. Both names must
// exist (ENOENT); a directory may not go under itself (EINVAL, both ways,
// as Linux); names of one inode exchange to no effect. Like renameOnce it
// returns done == false when a name changed between the look-up and the
// locks.
func (s *Store) exchangeOnce(sd *inode, srcName string, dd *inode, dstName string) (done bool, err error) {
	se, de, exists, err := s.renameLookup(sd, srcName, dd, dstName)
	if err != nil {
		return true, err
	}
	if !exists {
		return true, syscall.ENOENT
	}
	if de.Child == se.Child {
		return true, nil
	}
	src, err := s.itab.get(se.Child)
	if err != nil {
		return true, err
	}
	defer s.itab.put(src)
	dst, err := s.itab.get(de.Child)
	if err != nil {
		return true, err
	}
	defer s.itab.put(dst)
	// As in renameOnce, the walks' errors count once both directories
	// are known to be there.
	var under error
	if src.isDir() {
		under = s.checkNotUnder(dd.ino, src.ino)
	}
	if under == nil && dst.isDir() {
		under = s.checkNotUnder(sd.ino, dst.ino)
	}
	unlock := lockAll(sd, dd, src, dst)
	defer unlock()
	// dst is renameRecheck's victim only for the look under the locks:
	// nothing is dropped.
	r := renameOp{sd: sd, dd: dd, srcName: srcName, dstName: dstName, src: src, victim: dst}
	same, err := s.renameRecheck(&r, se, de, under)
	if err != nil {
		return true, err
	}
	if !same {
		return false, nil
	}
	if err := s.checkExchangeRoom(&r); err != nil {
		return true, err
	}
	return true, s.exchangeInTrans(&r)
}

// checkExchangeRoom checks, before the first change, that each inode's
// INODE_REF in its new directory takes its new name (EMLINK), counting the
// old name it loses there when both names are in one directory. The two
// DIR_ITEMs each lose and regain the same name: they need no room.
func (s *Store) checkExchangeRoom(r *renameOp) error {
	var srcDrop, dstDrop []string
	if r.sd == r.dd {
		srcDrop, dstDrop = []string{r.srcName}, []string{r.dstName}
	}
	if err := s.checkRoom(refKey(r.src.ino, r.dd.ino), syscall.EMLINK, r.dstName, srcDrop...); err != nil {
		return err
	}
	return s.checkRoom(refKey(r.victim.ino, r.sd.ino), syscall.EMLINK, r.srcName, dstDrop...)
}

// exchangeInTrans swaps the two names' inodes in one transaction: both
// names go, then each comes back naming the other inode, and the four
// inode items are written.
func (s *Store) exchangeInTrans(r *renameOp) (err error) {
	tr, err := s.startMeta(s.opMeta)
	if err != nil {
		return err
	}
	defer tr.End()
	defer s.abortOnError(&err)
	// The log cannot express an exchange either: the transaction's later
	// fsyncs commit, as after a rename.
	s.track.renamed(tr.ID())
	sd, dd, src, dst := r.sd, r.dd, r.src, r.victim
	if err := s.removeEntry(tr, sd.ino, r.srcName, r.cur); err != nil {
		return err
	}
	if err := s.removeEntry(tr, dd.ino, r.dstName, r.curDst); err != nil {
		return err
	}
	if err := s.addEntry(tr, dd, r.dstName, src.ino, dtype(src.item.Mode)); err != nil {
		return err
	}
	if err := s.addEntry(tr, sd, r.srcName, dst.ino, dtype(dst.item.Mode)); err != nil {
		return err
	}
	if sd != dd && src.isDir() != dst.isDir() {
		// One directory crosses from one parent to the other.
		from, to := sd, dd
		if dst.isDir() {
			from, to = dd, sd
		}
		from.item.Nlink--
		to.item.Nlink++
	}
	t := now()
	for _, d := range []*inode{sd, dd} {
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
	for _, in := range []*inode{src, dst} {
		in.item.Ctime = t
		if err := s.writeItem(tr, in); err != nil {
			return err
		}
	}
	return nil
}
