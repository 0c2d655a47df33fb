package engine

import "ustore/internal/assert"

// splitLeaf splits the path's leaf so that insLen more bytes fit at
// Slots[0] (btrfs: split_leaf). The halves are balanced by bytes; the path
// ends on the half that takes the insertion. The parent (or the root
// pointer) is write-locked and has room for one more pointer: full nodes
// were split on the way down.
func (t *Tree) splitLeaf(tr *Trans, p *Path, insLen int) error {
	e := t.eng
	left := p.Nodes[0]
	slot := p.Slots[0]
	n := left.ItemCount()
	assert.That(n >= 2, "splitLeaf: a full leaf has at least two items")
	// mid: the first item of the right half, chosen so each half holds
	// about half of the bytes.
	half := left.leafUsed() / 2
	mid, used := 1, left.itemsUsed(0, 1)
	for mid < n-1 && used+left.itemsUsed(mid, mid+1) <= half {
		used += left.itemsUsed(mid, mid+1)
		mid++
	}
	right, err := e.newNode(tr, t, 0)
	if err != nil {
		return err
	}
	leafMoveItems(left, mid, n, right, 0)
	if err := t.linkSplit(tr, p, 0, left, right); err != nil {
		return err
	}
	t.stats.leafSplits.Add(1)
	// Keep the half the insertion goes into.
	if slot > mid || (slot == mid && right.leafFree() > left.leafFree()) {
		left.lock.Unlock()
		p.Nodes[0] = right
		p.Slots[1]++
		p.Slots[0] = slot - mid
	} else {
		right.lock.Unlock()
	}
	assert.That(p.Nodes[0].leafFree() >= insLen, "splitLeaf: the chosen half has no room")
	return nil
}

// splitNode splits the internal node at level in two halves of pointers;
// the path ends on the half that covers key.
func (t *Tree) splitNode(tr *Trans, p *Path, level int, key Key) error {
	e := t.eng
	left := p.Nodes[level]
	n := left.ItemCount()
	mid := n / 2
	right, err := e.newNode(tr, t, level)
	if err != nil {
		return err
	}
	nodeMovePtrs(left, mid, n, right, 0)
	if err := t.linkSplit(tr, p, level, left, right); err != nil {
		return err
	}
	t.stats.nodeSplits.Add(1)
	if !key.Less(right.Key(0)) {
		left.lock.Unlock()
		p.Nodes[level] = right
		p.Slots[level+1]++
		p.Slots[level] = nodeSearch(right, key)
	} else {
		right.lock.Unlock()
		p.Slots[level] = nodeSearch(left, key)
	}
	return nil
}

// linkSplit puts right next to left in their parent — or, when left was the
// root, under a new root one level up.
func (t *Tree) linkSplit(tr *Trans, p *Path, level int, left, right *ExtentBuffer) error {
	if parent := p.Nodes[level+1]; parent != nil {
		assert.That(parent.ItemCount() < t.eng.geo.ptrsMax, "linkSplit: parent full")
		parent.nodeInsertPtr(p.Slots[level+1]+1, right.Key(0), right.bytenr, tr.id)
		t.stats.parentWriteLocks.Add(1)
		return nil
	}
	assert.That(p.rootLock == writeLocked, "linkSplit: root split without the root pointer")
	root, err := t.eng.newNode(tr, t, level+1)
	if err != nil {
		return err
	}
	root.nodeInsertPtr(0, left.Key(0), left.bytenr, left.Generation())
	root.nodeInsertPtr(1, right.Key(0), right.bytenr, right.Generation())
	t.setRoot(root)
	p.Nodes[level+1] = root
	p.locks[level+1] = writeLocked
	p.Slots[level+1] = 0
	return nil
}
