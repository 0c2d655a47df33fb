package store

import (
	"errors"
	"slices"
	"sync"

	"ustore/engine"
	"ustore/internal/assert"
	"ustore/journal"
)

// logTrack records what the running transaction changed that an fsync may
// have to log (btrfs keeps this per inode: the modified extent list, the
// directory's last_unlink_trans, logged_trans; the 2011 csum patch's lesson
// is that fsync cost must follow the change, not the file). It is kept per
// store, keyed by inode, so that an inode evicted from memory and loaded
// again loses nothing. Changes of an older transaction are dropped when the
// first change of a newer one arrives: that older transaction is committing,
// and a log sync waits for its commit.
//
// mu is a leaf lock: taken last, held for map updates only.
type logTrack struct {
	mu  sync.Mutex
	tid journal.Transid
	// files: file ranges whose extents changed.
	files map[Ino]*rangeSet
	// dirs: directory index ranges whose entries changed (added or
	// removed).
	dirs map[Ino]*rangeSet
	// names: inodes whose names (INODE_REFs) are in tid's log.
	names map[Ino]struct{}
	// dirsLogged: directories whose index ranges are in tid's log.
	dirsLogged map[Ino]struct{}
	// xattrs: inodes whose extended attributes changed since they were
	// last logged in tid.
	xattrs map[Ino]struct{}
	// unlinked: per directory, the inodes whose entries it lost in tid.
	// Logging the directory logs their names too: one with a name left
	// elsewhere must not be deleted by replay as an orphan (btrfs:
	// last_unlink_trans, log_all_parents).
	unlinked map[Ino][]Ino
	// shrunk: per list item (a DIR_ITEM, an INODE_REF) that lost entries
	// in tid and kept others, the bytes of the entries it lost
	// (itemGrown). Only such items are here: they are hash collisions and
	// hard links in one directory, so this stays small where unlinked
	// grows with every unlink.
	shrunk map[engine.Key]int
	// stale: why tid's log can no longer be trusted to express a later
	// fsync ("" while it can): a rename, or a name change of an inode or
	// directory whose names are already in the log. Every later fsync of
	// tid commits (btrfs: last_unlink_trans, log_full_commit).
	stale fallbackReason
}

// resetLocked moves the tracker to transaction tid (mu held). It reports
// false for a change of an older transaction, which the tracker ignores.
func (t *logTrack) resetLocked(tid journal.Transid) bool {
	if tid < t.tid {
		return false
	}
	if tid > t.tid {
		t.tid = tid
		t.files = map[Ino]*rangeSet{}
		t.dirs = map[Ino]*rangeSet{}
		t.names = map[Ino]struct{}{}
		t.dirsLogged = map[Ino]struct{}{}
		t.xattrs = map[Ino]struct{}{}
		t.unlinked = map[Ino][]Ino{}
		t.shrunk = map[engine.Key]int{}
		t.stale = fallbackNone
	}
	return true
}

// fileChanged records that ino's extents in [start, end) changed in tid.
func (t *logTrack) fileChanged(tid journal.Transid, ino Ino, start, end uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.resetLocked(tid) {
		return
	}
	rangeLocked(t.files, ino).add(start, end)
}

// entryAdded records a new entry at index idx of dir.
func (t *logTrack) entryAdded(tid journal.Transid, dir Ino, idx uint64, child Ino) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.resetLocked(tid) {
		return
	}
	t.dirRangeLocked(dir).add(idx, idx+1)
	if _, ok := t.names[child]; ok && t.stale == fallbackNone {
		t.stale = fallbackLoggedNameChanged // a link of a logged inode
	}
}

// entryRemoved records the removal of dir's entry at idx (naming child).
func (t *logTrack) entryRemoved(tid journal.Transid, dir Ino, idx uint64, child Ino) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.resetLocked(tid) {
		return
	}
	t.dirRangeLocked(dir).add(idx, idx+1)
	t.unlinked[dir] = append(t.unlinked[dir], child)
	_, named := t.names[child]
	_, listed := t.dirsLogged[dir]
	if (named || listed) && t.stale == fallbackNone {
		t.stale = fallbackLoggedNameChanged
	}
}

func (t *logTrack) dirRangeLocked(dir Ino) *rangeSet { return rangeLocked(t.dirs, dir) }

// rangeLocked returns ino's set in m (files or dirs), made on first use.
func rangeLocked(m map[Ino]*rangeSet, ino Ino) *rangeSet {
	rs := m[ino]
	if rs == nil {
		rs = &rangeSet{}
		m[ino] = rs
	}
	return rs
}

// itemShrunk records that list item key lost an entry of n bytes in tid
// and kept others.
func (t *logTrack) itemShrunk(tid journal.Transid, key engine.Key, n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.resetLocked(tid) {
		t.shrunk[key] += n
	}
}

// itemGrown records that list item key grew to size bytes in tid, in a
// tree whose items hold at most max. Replay applies the log to the last
// commit and keeps the names the log does not remove, so it may build an
// item the running store never held: the committed item's names plus the
// logged ones. A logged name is one the item still holds (removing it
// after its logging made the log stale), so the item replay builds holds
// at most the item now plus the committed names removed in tid: the bytes
// in shrunk, and one entry more for a removal that took the item's last
// (not counted: the item went with it). Should that bound pass max, replay
// would fail the mount with an item too large; the log is stale instead,
// and later fsyncs of tid commit.
func (t *logTrack) itemGrown(tid journal.Transid, key engine.Key, size, max int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.resetLocked(tid) {
		return
	}
	if size+t.shrunk[key]+engine.DirEntrySize(engine.NameMax) > max && t.stale == fallbackNone {
		t.stale = fallbackNameItemFull
	}
}

// renamed records a rename in tid: the log cannot express the fsyncs that
// follow it in tid (btrfs's directory trouble cases), which commit.
func (t *logTrack) renamed(tid journal.Transid) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.resetLocked(tid) && t.stale == fallbackNone {
		t.stale = fallbackRename
	}
}

// staleReason is why fsyncs of tid must commit, or fallbackNone.
func (t *logTrack) staleReason(tid journal.Transid) fallbackReason {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tid < t.tid {
		return fallbackOldTransaction
	}
	if tid > t.tid {
		return fallbackNone
	}
	return t.stale
}

// errTrackGone: the tracker has moved on to a newer transaction and
// dropped tid's changes (tid is committing): its fsyncs must commit.
var errTrackGone = errors.New("store: the transaction's change tracking is gone (it is committing)")

// takeFile returns and forgets ino's changed file ranges in tid.
func (t *logTrack) takeFile(tid journal.Transid, ino Ino) ([]rng, error) {
	return t.take(tid, ino, false)
}

// putFile gives ranges back after a failed log (the fsync commits, but a
// later fsync of the transaction must not think them logged).
func (t *logTrack) putFile(tid journal.Transid, ino Ino, rs []rng) {
	if len(rs) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.resetLocked(tid) {
		return
	}
	set := rangeLocked(t.files, ino)
	for _, r := range rs {
		set.add(r.start, r.end)
	}
}

// takeDir returns and forgets dir's changed index ranges in tid.
func (t *logTrack) takeDir(tid journal.Transid, dir Ino) ([]rng, error) {
	return t.take(tid, dir, true)
}

// take returns and forgets the ranges of key — a directory's (dir) or a
// file's — in tid; errTrackGone once the tracker has moved past tid.
func (t *logTrack) take(tid journal.Transid, key Ino, dir bool) ([]rng, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tid < t.tid {
		return nil, errTrackGone
	}
	m := t.files
	if dir {
		m = t.dirs
	}
	if tid != t.tid || m[key] == nil {
		return nil, nil
	}
	rs := m[key].rs
	delete(m, key)
	for i, r := range rs {
		assert.That(r.start < r.end && (i == 0 || rs[i-1].end < r.start),
			"store: tracked ranges are sorted, disjoint and not adjacent (invariant 10)")
	}
	return rs, nil
}

func (t *logTrack) putDir(tid journal.Transid, dir Ino, rs []rng) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.resetLocked(tid) {
		return
	}
	for _, r := range rs {
		t.dirRangeLocked(dir).add(r.start, r.end)
	}
}

// takeUnlinked returns and forgets the inodes dir lost entries of in tid.
func (t *logTrack) takeUnlinked(tid journal.Transid, dir Ino) ([]Ino, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tid < t.tid {
		return nil, errTrackGone
	}
	if tid != t.tid {
		return nil, nil
	}
	c := t.unlinked[dir]
	delete(t.unlinked, dir)
	return c, nil
}

// namesLogged records that ino's names are in tid's log; it reports
// whether they were already.
func (t *logTrack) namesLogged(tid journal.Transid, ino Ino) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.resetLocked(tid) {
		return false
	}
	_, ok := t.names[ino]
	t.names[ino] = struct{}{}
	return ok
}

// hasNames reports whether ino's names are in tid's log.
func (t *logTrack) hasNames(tid journal.Transid, ino Ino) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.names[ino]
	return ok && tid == t.tid
}

// dirLogged records that dir's index ranges are in tid's log.
func (t *logTrack) dirLogged(tid journal.Transid, dir Ino) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.resetLocked(tid) {
		t.dirsLogged[dir] = struct{}{}
	}
}

// rng is a half-open range [start, end).
type rng struct{ start, end uint64 }

// rangeSet is a set of disjoint, sorted, non-adjacent ranges. Appending
// past the end (sequential writes, new directory entries) is O(1).
type rangeSet struct{ rs []rng }

func (s *rangeSet) add(start, end uint64) {
	if start >= end {
		return
	}
	n := len(s.rs)
	if n == 0 || s.rs[n-1].end < start {
		s.rs = append(s.rs, rng{start, end})
		return
	}
	// First range that ends at or after start (touching merges).
	i, _ := slices.BinarySearchFunc(s.rs, start, func(r rng, v uint64) int {
		if r.end < v {
			return -1
		}
		return 1
	})
	j := i
	for j < n && s.rs[j].start <= end {
		start, end = min(start, s.rs[j].start), max(end, s.rs[j].end)
		j++
	}
	s.rs = slices.Replace(s.rs, i, j, rng{start, end})
	// The merged range keeps its neighbours at a distance: take checks
	// the whole list where it is read (invariant 10).
	if !((i == 0 || s.rs[i-1].end < start) && (i+1 == len(s.rs) || end < s.rs[i+1].start)) {
		assert.Failf("store: range [%d, %d) merged next to a neighbour (invariant 10)", start, end)
	}
}

// xattrsChanged records that ino's extended attributes changed in tid:
// its next fsync logs the whole set (logXattrs).
func (t *logTrack) xattrsChanged(tid journal.Transid, ino Ino) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.resetLocked(tid) {
		t.xattrs[ino] = struct{}{}
	}
}

// takeXattrs reports and forgets whether ino's attributes changed in tid
// since it was last logged; errTrackGone once the tracker has moved past
// tid.
func (t *logTrack) takeXattrs(tid journal.Transid, ino Ino) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tid < t.tid {
		return false, errTrackGone
	}
	if tid != t.tid {
		return false, nil
	}
	_, ok := t.xattrs[ino]
	delete(t.xattrs, ino)
	return ok, nil
}
