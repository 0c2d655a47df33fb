package engine

import (
	"fmt"
	"sort"

	"ustore/internal/assert"
)

// SearchSlot finds key in the tree and leaves p locked on the path to it
// (btrfs: btrfs_search_slot). It returns whether an item with the key
// exists; a miss leaves Slots[0] at the insertion point.
//
// tr == nil (or cow == false) is a read-only search: read locks, coupled
// (a parent is released once its child is locked), only the leaf stays
// locked. A cow search modifies: every node from the write level down is
// write-locked and CoW'd into tr's generation if older.
//
//	insLen > 0   the caller will add insLen bytes (items with headers) to the
//	             leaf: full nodes are split on the way down, the write level
//	             starts at 1 (leaf and parent)
//	insLen == 0  the caller changes the leaf in place: the write level starts
//	             at 0 (the leaf only) — no parent write lock, no split — and
//	             rises only if the leaf must be CoW'd
//	insLen < 0   the caller deletes from the leaf: nodes at their lower fill
//	             bound are rebalanced on the way down, the write level starts
//	             at 1 so the leaf can be rebalanced after the delete
//
// When a node needs a change (CoW, split, merge) whose parent is not
// write-locked, the search releases everything and restarts with a higher
// write level. The first CoW of a path in a transaction jumps straight to
// the root: every ancestor of an old node is old too.
func (t *Tree) SearchSlot(tr *Trans, key Key, p *Path, insLen int, cow bool) (bool, error) {
	p.Release()
	p.tree = t
	p.reserveOK = insLen < 0
	writeLevel := writeLevelNone
	if cow {
		if tr == nil {
			return false, fmt.Errorf("engine: SearchSlot: cow without a transaction")
		}
		writeLevel = 0
		if insLen != 0 {
			writeLevel = 1
		}
	}
	for attempt := 0; ; attempt++ {
		found, r, err := t.search(tr, key, p, insLen, writeLevel)
		if err != nil || r == noRestart {
			return found, err
		}
		assert.That(int(r) > writeLevel, "engine: a search restarts with a higher write level")
		p.Release()
		t.stats.restarts.Add(1)
		writeLevel = int(r)
		if attempt > 2*maxLevel+4 {
			return false, fmt.Errorf("engine: SearchSlot on tree %d: no progress after %d restarts", t.id, attempt)
		}
	}
}

// writeLevelNone is the write level of a read-only search: no node is
// write-locked. Otherwise the write level is the highest level whose node
// is write-locked; rootLevel+1 also write-locks the root pointer.
const writeLevelNone = -1

// restartLevel is what one descent asks of SearchSlot: noRestart when it is
// done (a hit, a miss or an error), else to release the path and descend
// again with the write level raised to the restartLevel.
type restartLevel int

// noRestart ends the search.
const noRestart restartLevel = -1

func (r restartLevel) String() string {
	if r == noRestart {
		return "no restart"
	}
	return fmt.Sprintf("restart at write level %d", int(r))
}

// descent is one walk from the root pointer down to a leaf.
type descent struct {
	t          *Tree
	tr         *Trans
	p          *Path
	key        Key
	insLen     int
	writeLevel int
	rootLevel  int
}

// search is one descent. A restartLevel other than noRestart asks for a
// restart with that write level.
func (t *Tree) search(tr *Trans, key Key, p *Path, insLen, writeLevel int) (found bool, r restartLevel, err error) {
	d := descent{t: t, tr: tr, p: p, key: key, insLen: insLen, writeLevel: writeLevel}
	d.lockRoot()
	for level := d.rootLevel; ; level-- {
		if r, err := d.cowNode(level); r != noRestart || err != nil {
			return false, r, err
		}
		if p.Nodes[level].IsLeaf() {
			assert.That(level == 0, "engine: a leaf is at level 0")
			return d.searchLeaf()
		}
		if r, err := d.searchNode(level); r != noRestart || err != nil {
			return false, r, err
		}
		if r, err := d.descend(level); r != noRestart || err != nil {
			return false, r, err
		}
	}
}

// lockRoot locks the root pointer, then the root node. The pointer is held
// in write mode when the root itself may be replaced, and released at once
// (coupled) when the root node is only read.
func (d *descent) lockRoot() {
	t, p := d.t, d.p
	t.rootLock.RLock()
	p.rootLock = readLocked
	root := t.root
	d.rootLevel = root.Level()
	if d.writeLevel > d.rootLevel {
		t.rootLock.RUnlock()
		t.rootLock.Lock()
		p.rootLock = writeLocked
		root = t.root
		d.rootLevel = root.Level()
	}
	d.lockNode(d.rootLevel, root)
	if p.rootLock == readLocked && d.rootLevel > d.writeLevel {
		// Coupled: the root node is locked, the pointer may move on.
		p.unlockRoot()
	}
}

// lockNode locks eb as level's node of the path: for writing at or below
// the write level.
func (d *descent) lockNode(level int, eb *ExtentBuffer) {
	d.p.lockNode(level, eb, level <= d.writeLevel)
	if level <= d.writeLevel && level > 0 {
		d.t.stats.parentWriteLocks.Add(1)
	}
}

// cowNode CoWs level's node into the transaction if it is write-locked and
// older, or asks for a restart when its parent is not write-locked.
func (d *descent) cowNode(level int) (restartLevel, error) {
	p := d.p
	if level > d.writeLevel || p.Nodes[level].Generation() == d.tr.id {
		return noRestart, nil
	}
	if !p.parentWriteLocked(level) {
		return restartLevel(p.cowRestartLevel(d.tr, level, d.rootLevel)), nil
	}
	return noRestart, d.t.cow(d.tr, p, level)
}

// searchLeaf ends the descent at the leaf: it sets Slots[0], and splits a
// leaf with no room for the insert.
func (d *descent) searchLeaf() (bool, restartLevel, error) {
	p := d.p
	slot, hit := leafSearch(p.Nodes[0], d.key)
	p.Slots[0] = slot
	if d.insLen > 0 && !hit && p.Nodes[0].leafFree() < d.insLen {
		if !p.parentWriteLocked(0) {
			return false, 1, nil
		}
		if err := d.t.splitLeaf(d.tr, p, d.key, d.insLen, false); err != nil {
			return false, noRestart, err
		}
		slot, hit = leafSearch(p.Nodes[0], d.key)
		p.Slots[0] = slot
	}
	if d.insLen > 0 && !hit {
		// The leaf has room: the insert touches nothing above it, so the
		// parent is released now, not at the end of the insert (btrfs:
		// unlock_up).
		p.unlockAbove(0)
	}
	return hit, noRestart, nil
}

// searchNode picks the child slot in level's internal node, reshapes the
// node if it is write-locked (a split before an insert, a rebalance before
// a delete), and narrows the path's key bounds.
func (d *descent) searchNode(level int) (restartLevel, error) {
	p := d.p
	eb := p.Nodes[level]
	slot := nodeSearch(eb, d.key)
	if d.insLen > 0 && slot == 0 && d.key.Less(eb.Key(0)) {
		// A new smallest key of the whole tree: the lower bounds on this
		// path move down with it, so every level must be writable.
		if level > d.writeLevel {
			return restartLevel(d.rootLevel + 1), nil
		}
		eb.setKey(0, d.key)
	}
	p.Slots[level] = slot
	if level <= d.writeLevel {
		if r, err := d.reshapeNode(level); r != noRestart || err != nil {
			return r, err
		}
		eb, slot = p.Nodes[level], p.Slots[level]
	}
	// Lower levels overwrite these: the last one set is the tightest.
	if slot+1 < eb.ItemCount() {
		p.upper, p.hasUpper = eb.Key(slot+1), true
	}
	if slot > 0 {
		p.lower, p.hasLower = eb.Key(slot), true
	}
	return noRestart, nil
}

// reshapeNode changes write-locked level's node on the way down so that a
// change below never has to go further up than its parent.
func (d *descent) reshapeNode(level int) (restartLevel, error) {
	p := d.p
	switch {
	case d.insLen > 0 && p.Nodes[level].ItemCount() >= d.t.eng.geo.ptrsMax-1:
		// Split a full node, so a split below never has to go further up
		// than its parent.
		if !p.parentWriteLocked(level) {
			return restartLevel(level + 1), nil
		}
		return noRestart, d.t.splitNode(d.tr, p, level, d.key)
	case d.insLen < 0 && level >= 2:
		// Rebalance an internal child at its lower bound, so that a merge
		// below cannot take it under.
		return noRestart, d.t.balanceChild(d.tr, p, level, d.key)
	}
	return noRestart, nil
}

// descend reads and locks the child at level's slot, asks for a restart if
// a delete may have to rebalance it under a read-locked node, and releases
// what is above the write level (lock coupling).
func (d *descent) descend(level int) (restartLevel, error) {
	p := d.p
	child, err := d.t.eng.readChild(d.t, p.Nodes[level], p.Slots[level])
	if err != nil {
		return noRestart, err
	}
	childLevel := level - 1
	d.lockNode(childLevel, child)
	if d.insLen < 0 && childLevel >= 1 && level > d.writeLevel && child.ItemCount() <= d.t.eng.geo.ptrsMin()+1 {
		// The child may need rebalancing, which needs this node
		// write-locked.
		return restartLevel(level), nil
	}
	if childLevel >= d.writeLevel {
		// Coupling: above the write level, nothing up there will change.
		p.unlockAbove(childLevel)
	}
	return noRestart, nil
}

// lockNode locks eb as level's node of the path.
func (p *Path) lockNode(level int, eb *ExtentBuffer, write bool) {
	if write {
		eb.lock.Lock()
		p.locks[level] = writeLocked
	} else {
		eb.lock.RLock()
		p.locks[level] = readLocked
	}
	p.Nodes[level] = eb
	p.gens[level] = eb.Generation()
}

// cowRestartLevel is the write level a search needs to CoW the node at
// level: up to the nearest ancestor already of the running transaction
// (which changes in place), or the root pointer if every ancestor is old —
// the first change of a path in a transaction (btrfs restarts one level up
// at a time; the generations seen on the way down let us jump).
func (p *Path) cowRestartLevel(tr *Trans, level, rootLevel int) int {
	for u := level + 1; u <= rootLevel; u++ {
		if p.gens[u] == tr.id {
			return u
		}
	}
	return rootLevel + 1
}

// parentWriteLocked reports whether the node above level may be changed:
// the parent node, or the root pointer for the root.
func (p *Path) parentWriteLocked(level int) bool {
	if level+1 <= maxLevel && p.Nodes[level+1] != nil {
		return p.locks[level+1] == writeLocked
	}
	return p.rootLock == writeLocked
}

// leafSearch returns the slot of key in a leaf, or where it would go.
func leafSearch(eb *ExtentBuffer, key Key) (int, bool) {
	n := eb.ItemCount()
	i := sort.Search(n, func(i int) bool { return !eb.Key(i).Less(key) })
	return i, i < n && eb.Key(i) == key
}

// nodeSearch returns the child slot to descend into: the last pointer whose
// key is <= key (slot 0 when key is below every key).
func nodeSearch(eb *ExtentBuffer, key Key) int {
	n := eb.ItemCount()
	i := sort.Search(n, func(i int) bool { return key.Less(eb.Key(i)) })
	if i == 0 {
		return 0
	}
	return i - 1
}
