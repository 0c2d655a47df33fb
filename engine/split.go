package engine

import "ustore/internal/assert"

// splitLeaf splits the path's leaf so that extra more bytes fit (btrfs:
// split_leaf): a new item of extra bytes (header included) at Slots[0], or,
// with grow, item Slots[0] growing by extra. The split point is the item
// boundary nearest to half of the bytes the two halves will hold once the
// change is made; as an item is at most a quarter of a leaf and the total is
// over a leaf, both halves end up between 3/8 and 3/4 full — inside the fill
// bounds. An append at the end of the leaf splits late instead (the right
// half just at its bound), so sequential keys fill leaves to ~3/4. The path ends on the half that takes the new item. The parent (or
// the root pointer) is write-locked and has room for one more pointer: full
// nodes were split on the way down.
func (t *Tree) splitLeaf(tr *Trans, p *Path, key Key, extra int, grow bool) error {
	e := t.eng
	if !grow {
		if ok, err := t.pushLeaf(tr, p, key, extra); ok || err != nil {
			return err
		}
	}
	left := p.Nodes[0]
	slot := p.Slots[0]
	n := left.ItemCount()
	// The sizes of the items as they will be, the new one included.
	sizes := make([]int, 0, n+1)
	for i := 0; i <= n; i++ {
		if !grow && i == slot {
			sizes = append(sizes, extra)
		}
		if i < n {
			sz := left.itemsUsed(i, i+1)
			if grow && i == slot {
				sz += extra
			}
			sizes = append(sizes, sz)
		}
	}
	total := 0
	for _, sz := range sizes {
		total += sz
	}
	best, bestDiff, prefix := 1, total, 0
	for b := 1; b < len(sizes); b++ {
		prefix += sizes[b-1]
		if d := abs(2*prefix - total); d < bestDiff {
			best, bestDiff = b, d
		}
	}
	if !grow && slot == n {
		// An append at the end of the leaf — sequential keys: inode
		// numbers, directory indexes, file offsets. A middle split would
		// leave every leaf half full for good; keep as much on the left as
		// still leaves the right half (the new item included) at its lower
		// bound.
		suffix := 0
		for b := len(sizes) - 1; b >= 1; b-- {
			suffix += sizes[b]
			if suffix >= e.geo.leafMinUsed() {
				if total-suffix <= e.geo.leafData && b > best {
					best = b
				}
				break
			}
		}
	}
	// Map the boundary in the virtual sequence to real items.
	mid, newLeft := best, false
	if !grow && best > slot {
		mid, newLeft = best-1, true
	}
	right, err := e.newNode(tr, t, 0, false)
	if err != nil {
		return err
	}
	newRoot, err := t.newRootIfNeeded(tr, p, 0)
	if err != nil {
		e.abandonNode(tr, right)
		return err
	}
	leafMoveItems(left, mid, n, right, 0)
	// The right half's key in the parent is its first key — the new item's
	// when it will be first there.
	rightKey := key
	if right.ItemCount() > 0 && (grow || newLeft || slot != mid) {
		rightKey = right.Key(0)
	}
	t.linkSplit(tr, p, 0, left, right, rightKey, newRoot)
	t.stats.leafSplits.Add(1)
	if !grow && !newLeft {
		left.lock.Unlock()
		p.lower, p.hasLower = rightKey, true
		p.Nodes[0] = right
		p.Slots[1]++
		p.Slots[0] = slot - mid
	} else {
		right.lock.Unlock()
		// The left half now ends where the right one begins.
		p.upper, p.hasUpper = rightKey, true
	}
	assert.That(grow || p.Nodes[0].leafFree() >= extra, "splitLeaf: the chosen half has no room")
	return nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// splitNode splits the internal node at level in two halves of pointers;
// the path ends on the half that covers key.
func (t *Tree) splitNode(tr *Trans, p *Path, level int, key Key) error {
	e := t.eng
	left := p.Nodes[level]
	n := left.ItemCount()
	mid := n / 2
	right, err := e.newNode(tr, t, level, false)
	if err != nil {
		return err
	}
	newRoot, err := t.newRootIfNeeded(tr, p, level)
	if err != nil {
		e.abandonNode(tr, right)
		return err
	}
	nodeMovePtrs(left, mid, n, right, 0)
	t.linkSplit(tr, p, level, left, right, right.Key(0), newRoot)
	t.stats.nodeSplits.Add(1)
	if !key.Less(right.Key(0)) {
		left.lock.Unlock()
		p.lower, p.hasLower = right.Key(0), true
		p.Nodes[level] = right
		p.Slots[level+1]++
		p.Slots[level] = nodeSearch(right, key)
	} else {
		right.lock.Unlock()
		p.Slots[level] = nodeSearch(left, key)
		p.upper, p.hasUpper = right.Key(0), true
	}
	return nil
}

// newRootIfNeeded allocates the new root a split of the root at level
// needs, before anything moves: an allocation failure (ENOSPC) then leaves
// the tree as it was.
func (t *Tree) newRootIfNeeded(tr *Trans, p *Path, level int) (*ExtentBuffer, error) {
	if p.Nodes[level+1] != nil {
		return nil, nil
	}
	assert.That(p.rootLock == writeLocked, "split of the root without the root pointer")
	return t.eng.newNode(tr, t, level+1, false)
}

// linkSplit puts right next to left in their parent — or, when left was
// the root, under newRoot, one level up.
func (t *Tree) linkSplit(tr *Trans, p *Path, level int, left, right *ExtentBuffer, rightKey Key, newRoot *ExtentBuffer) {
	if parent := p.Nodes[level+1]; parent != nil {
		assert.That(parent.ItemCount() < t.eng.geo.ptrsMax, "linkSplit: parent full")
		parent.nodeInsertPtr(p.Slots[level+1]+1, rightKey, right.bytenr, tr.id)
		return
	}
	// The old root covered every key: so does its pointer in the new root
	// (its first key may be about to change — the new item can go first).
	newRoot.nodeInsertPtr(0, MinKey, left.bytenr, left.Generation())
	newRoot.nodeInsertPtr(1, rightKey, right.bytenr, right.Generation())
	t.setRoot(tr, newRoot)
	p.Nodes[level+1] = newRoot
	p.locks[level+1] = writeLocked
	p.Slots[level+1] = 0
}
