package engine

// Rebalancing keeps every non-root node at or above its lower fill bound: a
// quarter of its capacity. A node under the bound is merged with a sibling
// when both fit in one node, else items move from the fuller one until they
// are even. The parent is write-locked throughout; siblings are locked after
// it, which is safe in any left/right order: a thread holding a sibling
// reached it through the parent before we locked the parent, and only goes
// down from there.

// balanceChild rebalances the internal child at Slots[level] of the node at
// level if it is at its lower bound, then re-aims the path at key.
func (t *Tree) balanceChild(tr *Trans, p *Path, level int, key Key) error {
	e := t.eng
	parent := p.Nodes[level]
	slot := p.Slots[level]
	if parent.ItemCount() < 2 {
		return nil
	}
	child, err := e.readChild(t, parent, slot)
	if err != nil {
		return err
	}
	child.lock.RLock()
	count := child.ItemCount()
	child.lock.RUnlock()
	if count > e.geo.ptrsMin()+1 {
		return nil
	}
	left, right, leftSlot, err := t.lockSiblings(tr, parent, slot)
	if err != nil {
		return err
	}
	ln, rn := left.ItemCount(), right.ItemCount()
	if ln+rn <= e.geo.ptrsMax-2 {
		nodeMovePtrs(right, 0, rn, left, ln)
		parent.nodeDeletePtrs(leftSlot+1, 1)
		e.freeNode(tr, right)
		t.stats.merges.Add(1)
	} else {
		target := (ln + rn) / 2
		if ln < target {
			nodeMovePtrs(right, 0, target-ln, left, ln)
		} else {
			nodeMovePtrs(left, target, ln, right, 0)
		}
		parent.setPtr(leftSlot+1, right.Key(0), right.bytenr, right.Generation())
		t.stats.rebalances.Add(1)
	}
	left.lock.Unlock()
	right.lock.Unlock()
	p.Slots[level] = nodeSearch(parent, key)
	return nil
}

// lockSiblings write-locks (and CoWs) child slot of parent and a sibling,
// returning them in key order with the left one's slot.
func (t *Tree) lockSiblings(tr *Trans, parent *ExtentBuffer, slot int) (left, right *ExtentBuffer, leftSlot int, err error) {
	leftSlot = slot
	if slot+1 >= parent.ItemCount() {
		leftSlot = slot - 1
	}
	left, err = t.lockChildForWrite(tr, parent, leftSlot, true)
	if err != nil {
		return nil, nil, 0, err
	}
	right, err = t.lockChildForWrite(tr, parent, leftSlot+1, true)
	if err != nil {
		left.lock.Unlock()
		return nil, nil, 0, err
	}
	return left, right, leftSlot, nil
}

// lockChildForWrite locks child slot of a write-locked parent of
// transaction tr, CoW'ing it into tr if older; reserveOK as Path's (a
// delete's rebalance may use the metadata reserve, an insert's push not).
func (t *Tree) lockChildForWrite(tr *Trans, parent *ExtentBuffer, slot int, reserveOK bool) (*ExtentBuffer, error) {
	e := t.eng
	child, err := e.readChild(t, parent, slot)
	if err != nil {
		return nil, err
	}
	child.lock.Lock()
	if child.Generation() == tr.id {
		return child, nil
	}
	var p Path
	p.reserveOK = reserveOK
	p.Nodes[0], p.locks[0] = child, writeLocked
	p.Nodes[1], p.Slots[1] = parent, slot
	if err := t.cow(tr, &p, 0); err != nil {
		child.lock.Unlock()
		return nil, err
	}
	return p.Nodes[0], nil
}

// balanceLeaf rebalances the path's leaf after a delete if it fell under
// its lower bound. It needs the parent write-locked (the write level of an
// insLen < 0 search). The path's leaf may be merged away: only Release the
// path afterwards.
func (t *Tree) balanceLeaf(tr *Trans, p *Path) error {
	e := t.eng
	leaf := p.Nodes[0]
	parent := p.Nodes[1]
	if parent == nil || leaf.leafUsed() >= e.geo.leafMinUsed() || parent.ItemCount() < 2 {
		return nil
	}
	slot := p.Slots[1]
	// The path holds the leaf; lock the sibling only.
	var left, right *ExtentBuffer
	leftSlot := slot
	if slot+1 < parent.ItemCount() {
		sib, err := t.lockChildForWrite(tr, parent, slot+1, true)
		if err != nil {
			return err
		}
		left, right = leaf, sib
	} else {
		sib, err := t.lockChildForWrite(tr, parent, slot-1, true)
		if err != nil {
			return err
		}
		left, right, leftSlot = sib, leaf, slot-1
	}
	ln, rn := left.ItemCount(), right.ItemCount()
	if left.leafUsed()+right.leafUsed() <= e.geo.leafData {
		leafMoveItems(right, 0, rn, left, ln)
		parent.nodeDeletePtrs(leftSlot+1, 1)
		e.freeNode(tr, right)
		t.stats.merges.Add(1)
	} else {
		// Move whole items from the fuller side until the bytes are even.
		for left.leafUsed() < right.leafUsed() && right.ItemCount() > 1 &&
			left.leafUsed()+right.itemsUsed(0, 1) <= right.leafUsed()-right.itemsUsed(0, 1) {
			leafMoveItems(right, 0, 1, left, left.ItemCount())
		}
		for right.leafUsed() < left.leafUsed() && left.ItemCount() > 1 &&
			right.leafUsed()+left.itemsUsed(left.ItemCount()-1, left.ItemCount()) <= left.leafUsed()-left.itemsUsed(left.ItemCount()-1, left.ItemCount()) {
			leafMoveItems(left, left.ItemCount()-1, left.ItemCount(), right, 0)
		}
		parent.setPtr(leftSlot+1, right.Key(0), right.bytenr, right.Generation())
		t.stats.rebalances.Add(1)
	}
	// The sibling is not in the path: unlock it here.
	if left == leaf {
		right.lock.Unlock()
	} else {
		left.lock.Unlock()
	}
	_ = rn
	return nil
}
