package store

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"ustore/engine"
	"ustore/internal/assert"
	"ustore/journal"
	"ustore/logtree"
	"ustore/trace"
)

// Logging an inode for fsync (btrfs: btrfs_log_inode). What goes into the
// log tree, as copies of fs and csum items:
//
//   - the inode item, as the tree has it (size = what is on disk);
//   - its names — every INODE_REF — unless it is the root, marked LogNames:
//     replay makes its names exactly these; and, for each parent created
//     in this transaction, that parent too (its item and names), up to a
//     committed directory, so the name has somewhere to live;
//   - a file's extents in the ranges changed since it was last logged
//     (logTrack): appended to the inode's file log (LOG_FILE records, in
//     order) as a range record — the range widened to whole extents — and
//     copies of the extents in it, with the checksums of their blocks. An
//     fsync appends after the inode's last record, so it dirties one leaf
//     there however its writes are scattered (the 2011 csum patch: cost
//     follows the change, not the file);
//   - its extended attributes, all of them (LogXattrs), when they changed
//     since it was last logged: replay makes its attributes exactly these;
//   - a directory's entries in the index ranges changed since it was last
//     logged, with DIR_LOG_INDEX items saying which ranges they replace (so
//     replay deletes removed names), inserted in batches; and the item of
//     each entry's inode created in this transaction (LogExists);
//   - a symbolic link's target, wherever the link is logged — whole, or
//     only so that an entry can point at it — unless the link's creation
//     is committed: a link is never without its target (symlink(2)
//     refuses an empty one), and the target never changes, so one copy in
//     the transaction's log serves every logging of it (btrfs logs a
//     symlink with LOG_INODE_ALL, for the same reason).
//
// The caller holds renameMu (read), the inode's mu and a transaction
// handle: the inode's items cannot change under it.

// logInode copies in's changed items into the log through w.
func (s *Store) logInode(ctx context.Context, w *logtree.Writer, tid journal.Transid, in *inode) error {
	_, span := trace.Start(ctx, "logtree.log_inode", trace.Ino(uint64(in.ino)))
	defer span.End()
	item, err := s.fs.Lookup(inodeKey(in.ino))
	if err != nil {
		return err
	}
	flags := logtree.LogNames
	if in.ino == engine.RootDirIno {
		flags = 0
	}
	if err := s.logItem(w, in.ino, item, flags); err != nil {
		return err
	}
	// Names logged earlier in this transaction are still right: a name
	// change since would have made every later fsync commit (logTrack).
	if flags&logtree.LogNames != 0 && !s.track.hasNames(tid, in.ino) {
		if err := s.logNames(w, tid, in.ino); err != nil {
			return err
		}
	}
	if err := s.logXattrs(w, tid, in.ino); err != nil {
		return err
	}
	switch {
	case in.isDir():
		err = s.logDir(w, tid, in.ino)
	case in.isLink():
		err = s.logTarget(w, in.ino, in.item.Generation)
	default:
		err = s.logFile(w, tid, in.ino)
	}
	if err != nil {
		span.RecordError(err)
	}
	return err
}

// logItem logs an inode item and how it was logged, keeping what an
// earlier logging of it in this transaction promised (flags only grow).
func (s *Store) logItem(w *logtree.Writer, ino Ino, item []byte, flags logtree.LogFlags) error {
	if err := w.Set(inodeKey(ino), item); err != nil {
		return err
	}
	return s.logFlags(w, ino, flags)
}

// logFlags records how ino is logged; flags only grow.
func (s *Store) logFlags(w *logtree.Writer, ino Ino, flags logtree.LogFlags) error {
	old, err := w.Lookup(logtree.LogInodeKey(ino))
	switch {
	case err == nil && len(old) == 1:
		flags |= logtree.LogFlags(old[0])
		if flags == logtree.LogFlags(old[0]) {
			return nil
		}
	case err != nil && !logtree.IsNotFound(err):
		return err
	}
	return w.Set(logtree.LogInodeKey(ino), []byte{byte(flags)})
}

// logNames logs every name of ino and, walking up, each parent created in
// tid that has no names in the log yet, up to a committed directory (or
// the root): the name needs somewhere to live after replay.
//
// The walk is depth-first in the order of each inode's INODE_REFs — the
// order a recursion would take — but over an explicit stack on the heap:
// one transaction may create a chain of directories as deep as it likes,
// and a goroutine's stack must not grow with it (the project's style: no
// recursion over unbounded depth; TestLog_DeepNewDirs).
func (s *Store) logNames(w *logtree.Writer, tid journal.Transid, ino Ino) error {
	// nameFrame is one inode whose names are logged: the parents of its
	// names not yet looked at are parents[next:].
	type nameFrame struct {
		ino     Ino
		parents []Ino
		next    int
	}
	parents, err := s.logOwnNames(w, tid, ino)
	if err != nil {
		return err
	}
	stack := []nameFrame{{ino: ino, parents: parents}}
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.next == len(top.parents) {
			stack = stack[:len(stack)-1]
			continue
		}
		parent := top.parents[top.next]
		top.next++
		if parent == engine.RootDirIno || s.track.hasNames(tid, parent) {
			continue
		}
		b, err := s.fs.Lookup(inodeKey(parent))
		if err != nil {
			return fmt.Errorf("parent %d of %d: %w", parent, top.ino, err)
		}
		it, err := engine.DecodeInodeItem(b)
		if err != nil {
			return err
		}
		if s.e.Committed(it.Generation) {
			continue // its name is durable: it is not new
		}
		if err := s.logItem(w, parent, b, logtree.LogNames); err != nil {
			return err
		}
		pp, err := s.logOwnNames(w, tid, parent)
		if err != nil {
			return err
		}
		// A directory has one name, so the walk is a chain up to a
		// committed directory: the stack is at most that chain, a few
		// words a frame.
		stack = append(stack, nameFrame{ino: parent, parents: pp})
	}
	return nil
}

// logOwnNames replaces the log's INODE_REFs of ino with the tree's, marks
// ino's names logged in tid, and returns the directories they are in, in
// key order.
func (s *Store) logOwnNames(w *logtree.Writer, tid journal.Transid, ino Ino) ([]Ino, error) {
	var keys []engine.Key
	var refs [][]byte
	err := s.fs.Iterate(refKey(ino, 0), func(k engine.Key, b []byte) bool {
		if k.Ino() != ino || k.Type != engine.TypeInodeRef {
			return false
		}
		keys = append(keys, k)
		refs = append(refs, append([]byte(nil), b...))
		return true
	})
	if err != nil {
		return nil, err
	}
	if err := w.DeleteRange(refKey(ino, 0), refKey(ino, ^Ino(0))); err != nil {
		return nil, err
	}
	if err := w.Insert(keys, refs); err != nil {
		return nil, err
	}
	s.track.namesLogged(tid, ino)
	parents := make([]Ino, len(keys))
	for i, k := range keys {
		parents[i] = refParent(k)
	}
	return parents, nil
}

// logXattrs replaces the log's XATTR_ITEMs of ino with the tree's, all
// of them, if its attributes changed in tid since it was last logged, and
// marks it LogXattrs: replay makes its attributes exactly these. A handful
// of small items at most per inode: copying the set whole costs less than
// tracking which hashes changed, and replay needs no merge.
func (s *Store) logXattrs(w *logtree.Writer, tid journal.Transid, ino Ino) error {
	changed, err := s.track.takeXattrs(tid, ino)
	if err != nil || !changed {
		return err
	}
	if err := s.copyXattrs(w, ino); err != nil {
		s.track.xattrsChanged(tid, ino)
		return err
	}
	return nil
}

func (s *Store) copyXattrs(w *logtree.Writer, ino Ino) error {
	var keys []engine.Key
	var items [][]byte
	err := s.fs.Iterate(engine.InoKey(ino, engine.TypeXattrItem, 0), func(k engine.Key, b []byte) bool {
		if k.Ino() != ino || k.Type != engine.TypeXattrItem {
			return false
		}
		keys = append(keys, k)
		items = append(items, append([]byte(nil), b...))
		return true
	})
	if err != nil {
		return err
	}
	if err := w.DeleteRange(engine.InoKey(ino, engine.TypeXattrItem, 0), engine.InoKey(ino, engine.TypeXattrItem, ^uint64(0))); err != nil {
		return err
	}
	if err := w.Insert(keys, items); err != nil {
		return err
	}
	return s.logFlags(w, ino, logtree.LogXattrs)
}

// logFile appends the ranges of ino changed in tid to its file log: for
// each, a range record — the range widened to the whole extents that
// straddle it — and copies of the tree's extents in it; all of them in one
// batch after the log's last record, then the checksums of the extents'
// blocks.
func (s *Store) logFile(w *logtree.Writer, tid journal.Transid, ino Ino) error {
	rs, err := s.track.takeFile(tid, ino)
	if err != nil || len(rs) == 0 {
		return err
	}
	if err := s.appendFileLog(w, ino, rs); err != nil {
		s.track.putFile(tid, ino, rs)
		return err
	}
	return nil
}

func (s *Store) appendFileLog(w *logtree.Writer, ino Ino, rs []rng) error {
	seq := uint64(0)
	err := w.IterateReverse(logtree.FileLogKey(ino, ^uint64(0)), func(k engine.Key, _ []byte) bool {
		if k.Ino() == ino && k.Type == logtree.TypeLogFile {
			seq = k.Offset + 1
		}
		return false
	})
	if err != nil {
		return err
	}
	var keys []engine.Key
	var items [][]byte
	var regular []engine.FileExtent
	for _, r := range rs {
		a, b := r.start, r.end
		xs, err := s.extentsIn(ino, a, b)
		if err != nil {
			return err
		}
		for _, x := range xs {
			a, b = min(a, x.off), max(b, x.end())
		}
		keys = append(keys, logtree.FileLogKey(ino, seq))
		items = append(items, logtree.EncodeFileRange(a, b))
		seq++
		for i := range xs {
			keys = append(keys, logtree.FileLogKey(ino, seq))
			items = append(items, logtree.EncodeFileExtent(xs[i].off, &xs[i].x))
			seq++
			if xs[i].x.Type == engine.ExtentRegular {
				regular = append(regular, xs[i].x)
			}
		}
	}
	// Append-only (invariant 11): the records take the sequence numbers
	// after the inode's last one, in order.
	assert.That(len(keys) == 0 || keys[len(keys)-1].Offset == seq-1 && keys[0].Offset == seq-uint64(len(keys)),
		"store: a file log's records are appended after its last (invariant 11)")
	if err := w.Insert(keys, items); err != nil {
		return err
	}
	// The checksums of the regular extents, usually new to the log.
	var sumKeys []engine.Key
	var sums [][]byte
	for _, x := range regular {
		a, b := uint64(x.DiskBytenr), uint64(x.DiskEnd())
		// Only the extent's part of each item is copied out of the leaf.
		err := s.eachCsum(a, b, func(c csumItem) bool {
			start, end := max(c.start, a), min(c.end(), b)
			sumKeys = append(sumKeys, csumKey(start))
			sums = append(sums, slices.Clone(c.slice(start, end)))
			return true
		})
		if err != nil {
			return err
		}
	}
	return logCsums(w, sumKeys, sums)
}

// logCsums logs checksum items, replacing any logged with the same key.
// The extents of one writeback lie side by side on the device, so their
// items are usually one run of keys new to the log: one batch insert, one
// descent of the log tree. A batch refused (an item of the run already
// logged, or another's key inside it) goes in item by item; an item the
// batch did insert is then replaced by itself.
func logCsums(w *logtree.Writer, keys []engine.Key, sums [][]byte) error {
	ascending := true
	for i := 1; i < len(keys) && ascending; i++ {
		ascending = keys[i-1].Less(keys[i])
	}
	if len(keys) > 1 && ascending {
		err := w.Insert(keys, sums)
		if !errors.Is(err, engine.ErrExists) {
			return err
		}
	}
	for i, k := range keys {
		err := w.Insert([]engine.Key{k}, sums[i:i+1])
		if errors.Is(err, engine.ErrExists) {
			err = w.Set(k, sums[i])
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// lastRangeBefore returns the start of ino's last logged range item of
// type typ that starts before at, or at if there is none: where a scan for
// the ranges touching [at, …) begins.
func lastRangeBefore(w *logtree.Writer, ino Ino, typ uint8, at uint64) (uint64, error) {
	from := at
	if at == 0 {
		return 0, nil
	}
	err := w.IterateReverse(engine.InoKey(ino, typ, at-1), func(k engine.Key, _ []byte) bool {
		if k.Ino() == ino && k.Type == typ {
			from = k.Offset
		}
		return false
	})
	return from, err
}

// logDir logs the index ranges of directory dir changed in tid.
func (s *Store) logDir(w *logtree.Writer, tid journal.Transid, dir Ino) error {
	rs, err := s.track.takeDir(tid, dir)
	if err != nil {
		return err
	}
	fresh, err := noDirRanges(w, dir)
	if err != nil {
		s.track.putDir(tid, dir, rs)
		return err
	}
	if fresh {
		if err := s.logDirRangesFresh(w, tid, dir, rs); err != nil {
			s.track.putDir(tid, dir, rs)
			return err
		}
	}
	for i, r := range rs {
		if fresh {
			break
		}
		if err := s.logDirRange(w, tid, dir, r.start, r.end); err != nil {
			s.track.putDir(tid, dir, rs[i:])
			return err
		}
	}
	// An inode that lost its entry here but has a name elsewhere keeps
	// it: log its names, or replay would take it for an orphan.
	unlinked, err := s.track.takeUnlinked(tid, dir)
	if err != nil {
		return err
	}
	for _, child := range unlinked {
		b, err := s.fs.Lookup(inodeKey(child))
		if errors.Is(err, engine.ErrNotFound) {
			continue // deleted with its last name
		}
		if err != nil {
			return err
		}
		it, err := engine.DecodeInodeItem(b)
		if err != nil {
			return err
		}
		// Its names only: its data was not asked to be durable. An inode
		// the last commit does not have needs its item (a file logged
		// empty; a symbolic link with its target).
		if !s.e.Committed(it.Generation) {
			if it.Mode&ModeType == ModeFile {
				it.Size, it.Nbytes = 0, 0
			}
			if _, err := w.Lookup(inodeKey(child)); logtree.IsNotFound(err) {
				if err := w.Set(inodeKey(child), it.Encode(nil)); err != nil {
					return err
				}
			} else if err != nil {
				return err
			}
			if it.Mode&ModeType == ModeLink {
				if err := s.logTarget(w, child, it.Generation); err != nil {
					return err
				}
			}
		}
		if err := s.logFlags(w, child, logtree.LogNames); err != nil {
			return err
		}
		if err := s.logNames(w, tid, child); err != nil {
			return err
		}
	}
	s.track.dirLogged(tid, dir)
	return nil
}

// noDirRanges reports whether the log holds no index range of dir: its
// first logging in the transaction.
func noDirRanges(w *logtree.Writer, dir Ino) (bool, error) {
	none := true
	err := w.Iterate(logtree.DirRangeKey(dir, 0), func(k engine.Key, _ []byte) bool {
		none = k.Ino() != dir || k.Type != logtree.TypeDirLogIndex
		return false
	})
	return none, err
}

// logDirRangesFresh logs dir's changed ranges rs when the log holds none
// of dir's yet (so none of its entries either): nothing to merge or
// delete, every range item in one batch and the entries in batches — a
// directory that lost 1,000 scattered entries is 1,000 range items in one
// insertion, not 1,000 merges.
func (s *Store) logDirRangesFresh(w *logtree.Writer, tid journal.Transid, dir Ino, rs []rng) error {
	rkeys := make([]engine.Key, len(rs))
	ritems := make([][]byte, len(rs))
	for i, r := range rs {
		rkeys[i], ritems[i] = logtree.DirRangeKey(dir, r.start), logtree.EncodeEnd(r.end)
	}
	if err := w.Insert(rkeys, ritems); err != nil {
		return err
	}
	return s.logDirEntries(w, tid, dir, rs)
}

// logDirEntries copies dir's entries in the ranges rs into the log, in
// batches, then logs that each child they name exists.
func (s *Store) logDirEntries(w *logtree.Writer, tid journal.Transid, dir Ino, rs []rng) error {
	b := entryBatch{w: w}
	for _, r := range rs {
		if err := s.copyEntries(&b, dir, r.start, r.end); err != nil {
			return err
		}
	}
	if err := b.flush(); err != nil {
		return err
	}
	for _, c := range b.children {
		if err := s.logExists(w, tid, c); err != nil {
			return err
		}
	}
	return nil
}

// dirBatch bounds one batch insertion of directory entries (memory).
const dirBatch = 4096

// entryBatch gathers copies of DIR_INDEX items, in key order, for batch
// insertion into the log, and the inodes they name.
type entryBatch struct {
	w        *logtree.Writer
	keys     []engine.Key
	items    [][]byte
	children []Ino
}

func (b *entryBatch) flush() error {
	err := b.w.Insert(b.keys, b.items)
	b.keys, b.items = b.keys[:0], b.items[:0]
	return err
}

// copyEntries adds dir's entries with index in [lo, hi) to b, inserting
// each dirBatch of them.
func (s *Store) copyEntries(b *entryBatch, dir Ino, lo, hi uint64) error {
	var derr error
	err := s.fs.Iterate(dirIndexKey(dir, lo), func(k engine.Key, v []byte) bool {
		if k.Ino() != dir || k.Type != engine.TypeDirIndex || k.Offset >= hi {
			return false
		}
		b.keys = append(b.keys, k)
		b.items = append(b.items, append([]byte(nil), v...))
		if es, err := engine.DecodeDirEntries(v); err == nil && len(es) == 1 {
			b.children = append(b.children, es[0].Child)
		}
		if len(b.keys) == dirBatch {
			derr = b.flush()
		}
		return derr == nil
	})
	if err == nil {
		err = derr
	}
	return err
}

// logDirRange replaces the log's entries of dir in [lo, hi) with the
// tree's.
func (s *Store) logDirRange(w *logtree.Writer, tid journal.Transid, dir Ino, lo, hi uint64) error {
	from, err := lastRangeBefore(w, dir, logtree.TypeDirLogIndex, lo)
	if err != nil {
		return err
	}
	var derr error
	err = w.Iterate(logtree.DirRangeKey(dir, from), func(k engine.Key, v []byte) bool {
		if k.Ino() != dir || k.Type != logtree.TypeDirLogIndex || k.Offset > hi {
			return false
		}
		end, err := logtree.DecodeEnd(v)
		if err != nil {
			derr = err
			return false
		}
		if end >= lo {
			lo, hi = min(lo, k.Offset), max(hi, end)
		}
		return true
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return err
	}
	if err := w.DeleteRange(logtree.DirRangeKey(dir, lo), logtree.DirRangeKey(dir, hi-1)); err != nil {
		return err
	}
	if err := w.DeleteRange(dirIndexKey(dir, lo), dirIndexKey(dir, hi-1)); err != nil {
		return err
	}
	if err := w.Set(logtree.DirRangeKey(dir, lo), logtree.EncodeEnd(hi)); err != nil {
		return err
	}
	return s.logDirEntries(w, tid, dir, []rng{{start: lo, end: hi}})
}

// logExists logs the item of child, an entry's inode, if it was created
// in this transaction and is not in the log yet (btrfs: LOG_INODE_EXISTS):
// replay must find the inode the entry names. Its data was not asked to be
// durable: a file is logged empty.
func (s *Store) logExists(w *logtree.Writer, tid journal.Transid, child Ino) error {
	if s.track.hasNames(tid, child) {
		return nil
	}
	if _, err := w.Lookup(logtree.LogInodeKey(child)); err == nil {
		return nil
	} else if !logtree.IsNotFound(err) {
		return err
	}
	b, err := s.fs.Lookup(inodeKey(child))
	if err != nil {
		return fmt.Errorf("entry's inode %d: %w", child, err)
	}
	it, err := engine.DecodeInodeItem(b)
	if err != nil {
		return err
	}
	if s.e.Committed(it.Generation) {
		return nil
	}
	if it.Mode&ModeType == ModeFile {
		it.Size, it.Nbytes = 0, 0
	}
	// Neither key is in the log (no LOG_INODE item, so no logging of
	// it), and none can sit between them: one batch of two.
	if err := w.Insert([]engine.Key{inodeKey(child), logtree.LogInodeKey(child)},
		[][]byte{it.Encode(nil), {byte(logtree.LogExists)}}); err != nil {
		return err
	}
	if it.Mode&ModeType == ModeLink {
		return s.logTarget(w, child, it.Generation)
	}
	return nil
}

// logTarget logs symbolic link ino's target — a file log of one range
// record over block 0 and a copy of its inline extent — unless the link's
// creation (gen) is committed, its target then being in the tree, or the
// log already holds it: the target never changes.
func (s *Store) logTarget(w *logtree.Writer, ino Ino, gen journal.Transid) error {
	if s.e.Committed(gen) {
		return nil
	}
	logged := false
	err := w.Iterate(logtree.FileLogKey(ino, 0), func(k engine.Key, _ []byte) bool {
		logged = k.Ino() == ino && k.Type == logtree.TypeLogFile
		return false
	})
	if err != nil || logged {
		return err
	}
	return s.appendFileLog(w, ino, []rng{{start: 0, end: blockSize}})
}

// errFallback is a fsync that must commit, with the reason counted.
type errFallback struct{ reason fallbackReason }

func (e *errFallback) Error() string { return "fsync falls back to a commit: " + e.reason.String() }
func (e *errFallback) Unwrap() error { return logtree.ErrLogForceCommit }

// logAndSync logs in and syncs the log. A result wrapping
// logtree.ErrLogForceCommit means: commit instead.
func (s *Store) logAndSync(ctx context.Context, in *inode) (outcome fsyncOutcome, err error) {
	s.renameMu.RLock()
	in.mu.Lock()
	locked := true
	unlock := func() {
		if locked {
			locked = false
			in.mu.Unlock()
			s.renameMu.RUnlock()
		}
	}
	defer unlock()
	if in.deleted.Load() {
		return outcomeCommitted, nil // nothing of it can come back: nothing to make durable
	}
	tr, err := s.e.Start()
	if err != nil {
		return outcomeFailed, err
	}
	defer tr.End()
	tid := tr.ID()
	if s.e.Committed(in.lastTrans.Load()) {
		return outcomeCommitted, nil
	}
	if in.orphanLocked() {
		return outcomeCommit, &errFallback{fallbackUnlinked}
	}
	if reason := s.track.staleReason(tid); reason != fallbackNone {
		return outcomeCommit, &errFallback{reason}
	}
	lctx, lt, err := s.tlog.Join(tr)
	if err != nil {
		if errors.Is(err, engine.ErrLogFull) {
			return outcomeCommit, &errFallback{fallbackLogFull}
		}
		return outcomeCommit, &errFallback{fallbackLogPoisoned}
	}
	// The generation this inode is logged at is its own transaction's and
	// stays above lastLogCommit until its sync is durable (the committer
	// waits for this context's Done): so inLog, which reads both without a
	// lock, cannot answer yes for it before then (store invariants 8, 9).
	assert.That(lctx.Generation().Transid() == tid, "store: an inode is logged in its own transaction's log (invariant 9)")
	assert.That(lctx.Generation() > s.tlog.LastLogCommit(), "store: a generation being logged is not yet durable (invariant 8)")
	w, err := s.tlog.Writer(lctx, lt)
	if err == nil {
		changes := in.changes.Load()
		if err = s.logInode(ctx, w, tid, in); err == nil {
			// in.mu is held: the marks only grow (invariant 9; inLog
			// checks the pair where it reads them).
			if !(changes >= in.loggedChanges.Load() && lctx.Generation() >= engine.LogGen(in.loggedGen.Load())) {
				assert.Failf("store: inode %d logged at generation %d with %d changes, after generation %d with %d",
					in.ino, lctx.Generation(), changes, in.loggedGen.Load(), in.loggedChanges.Load())
			}
			in.loggedChanges.Store(changes)
			in.loggedGen.Store(uint64(lctx.Generation()))
		}
	}
	if err != nil {
		s.tlog.Poison(lctx)
		lctx.Done()
		if errors.Is(err, errTrackGone) {
			return outcomeCommit, &errFallback{fallbackOldTransaction}
		}
		s.log.Warn("fsync: logging failed; committing instead", "ino", in.ino, "err", err)
		return outcomeCommit, &errFallback{fallbackLogError}
	}
	unlock()
	if err := s.logSync(ctx, lctx); err != nil {
		if errors.Is(err, logtree.ErrLogForceCommit) {
			return outcomeCommit, &errFallback{fallbackLogPoisoned}
		}
		if errors.Is(err, engine.ErrLogFull) && !errors.Is(err, engine.ErrReadOnly) {
			// No log chain to append to (engine.SyncLog changed
			// nothing): commit.
			return outcomeCommit, &errFallback{fallbackLogFull}
		}
		return outcomeFailed, err
	}
	return outcomeLogged, nil
}

func (s *Store) logSync(ctx context.Context, c *logtree.Ctx) error { return s.tlog.Sync(ctx, c) }

// inLog reports whether in's last change is in a durable log: atomics
// only (btrfs_inode_in_log).
func (s *Store) inLog(in *inode) bool {
	gen := engine.LogGen(in.loggedGen.Load())
	logged, changes := in.loggedChanges.Load(), in.changes.Load()
	// loggedChanges is a count of changes read before logging, and the
	// count only grows (the pair of logAndSync's check, invariant 9).
	if logged > changes {
		assert.Failf("store: inode %d logged with %d changes, but has %d", in.ino, logged, changes)
	}
	return gen != 0 && logged == changes &&
		gen.Transid() == in.lastTrans.Load() && gen <= s.tlog.LastLogCommit()
}
