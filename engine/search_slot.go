package engine

import (
	"fmt"
	"sort"
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
	writeLevel := -1
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
		found, restartAt, err := t.search(tr, key, p, insLen, writeLevel)
		if err != nil || restartAt < 0 {
			return found, err
		}
		p.Release()
		t.stats.restarts.Add(1)
		writeLevel = restartAt
		if attempt > 2*maxLevel+4 {
			return false, fmt.Errorf("engine: SearchSlot on tree %d: no progress after %d restarts", t.id, attempt)
		}
	}
}

// search is one descent. restartAt >= 0 asks for a restart with that write
// level.
func (t *Tree) search(tr *Trans, key Key, p *Path, insLen, writeLevel int) (found bool, restartAt int, err error) {
	e := t.eng
	// Lock the root pointer, then the root node.
	t.rootLock.RLock()
	p.rootLock = readLocked
	root := t.root
	rootLevel := root.Level()
	if writeLevel > rootLevel {
		// The root itself may be replaced: hold the pointer in write mode.
		t.rootLock.RUnlock()
		t.rootLock.Lock()
		p.rootLock = writeLocked
		root = t.root
		rootLevel = root.Level()
	}
	p.lockNode(rootLevel, root, rootLevel <= writeLevel)
	if rootLevel <= writeLevel && rootLevel > 0 {
		t.stats.parentWriteLocks.Add(1)
	}
	if p.rootLock == readLocked && rootLevel > writeLevel {
		// Coupled: the root node is locked, the pointer may move on.
		p.unlockRoot()
	}

	for level := rootLevel; ; level-- {
		eb := p.Nodes[level]
		if level <= writeLevel {
			if eb.Generation() != tr.id {
				if !p.parentWriteLocked(level) {
					return false, p.cowRestartLevel(tr, level, rootLevel), nil
				}
				if err := t.cow(tr, p, level); err != nil {
					return false, -1, err
				}
				eb = p.Nodes[level]
			}
		}
		if eb.IsLeaf() {
			slot, hit := leafSearch(eb, key)
			p.Slots[0] = slot
			if insLen > 0 && !hit && eb.leafFree() < insLen {
				if !p.parentWriteLocked(0) {
					return false, 1, nil
				}
				if err := t.splitLeaf(tr, p, key, insLen, false); err != nil {
					return false, -1, err
				}
				eb = p.Nodes[0]
				slot, hit = leafSearch(eb, key)
				p.Slots[0] = slot
			}
			if insLen > 0 && !hit {
				// The leaf has room: the insert touches nothing above it,
				// so the parent is released now, not at the end of the
				// insert (btrfs: unlock_up).
				p.unlockAbove(0)
			}
			return hit, -1, nil
		}
		slot := nodeSearch(eb, key)
		if insLen > 0 && slot == 0 && key.Less(eb.Key(0)) {
			// A new smallest key of the whole tree: the lower bounds on
			// this path move down with it, so every level must be writable.
			if level > writeLevel {
				return false, rootLevel + 1, nil
			}
			eb.setKey(0, key)
		}
		p.Slots[level] = slot
		if level <= writeLevel {
			switch {
			case insLen > 0 && eb.ItemCount() >= e.geo.ptrsMax-1:
				// Split a full node on the way down, so a split below never
				// has to go further up than its parent.
				if !p.parentWriteLocked(level) {
					return false, level + 1, nil
				}
				if err := t.splitNode(tr, p, level, key); err != nil {
					return false, -1, err
				}
				eb = p.Nodes[level]
				slot = p.Slots[level]
			case insLen < 0 && level >= 2:
				// Rebalance an internal child at its lower bound on the way
				// down, so that a merge below cannot take it under.
				if err := t.balanceChild(tr, p, level, key); err != nil {
					return false, -1, err
				}
				eb = p.Nodes[level]
				slot = p.Slots[level]
			}
		}
		// Lower levels overwrite these: the last one set is the tightest.
		if slot+1 < eb.ItemCount() {
			p.upper, p.hasUpper = eb.Key(slot+1), true
		}
		if slot > 0 {
			p.lower, p.hasLower = eb.Key(slot), true
		}
		childLevel := level - 1
		child, err := e.readChild(t, eb, slot)
		if err != nil {
			return false, -1, err
		}
		p.lockNode(childLevel, child, childLevel <= writeLevel)
		if childLevel <= writeLevel && childLevel > 0 {
			t.stats.parentWriteLocks.Add(1)
		}
		if insLen < 0 && childLevel >= 1 && level > writeLevel && child.ItemCount() <= e.geo.ptrsMin()+1 {
			// The child may need rebalancing, which needs this node
			// write-locked.
			return false, level, nil
		}
		if childLevel >= writeLevel {
			// Coupling: above the write level, nothing up there will change.
			p.unlockAbove(childLevel)
		}
	}
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
