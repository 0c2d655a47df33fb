package engine

// Pushing items into a sibling before splitting (btrfs: push_leaf_right and
// push_leaf_left, which split_leaf tries first). A split leaves two leaves
// about half full, and under random inserts a tree of split-only leaves
// settles near ln 2 ≈ 69 % full; every commit then writes that much more
// of a tree whose leaves all changed. Moving items into a neighbour with
// room instead keeps leaves fuller (the B*-tree's idea): a full leaf and
// its sibling share their bytes evenly and no node is added.
//
// The rules, each for a reason:
//   - only an insert (not an item growing in place) of a tree that is not
//     the log tree: a log sync writes every node its fsyncs changed, and a
//     push changes two where a split changes two and makes one, so the log
//     gains nothing and its shapes stay as they were;
//   - not an append after the leaf's last item: sequential keys (inode
//     numbers, directory indexes, file offsets) already split late and
//     leave leaves three quarters full (splitLeaf), and pushing the leaf's
//     first items left on every append would copy a leaf's worth of bytes
//     for a few points of fill;
//   - the new item stays in the path's leaf: items after it move right,
//     items before it move left, so the path needs no re-aiming and its
//     bounds tighten to the sibling's new first key;
//   - only into a sibling already in memory: the parent is write-locked, and
//     a device read under it would stall every search through it;
//   - only into a sibling with at least pushMinFree of a leaf free, and only
//     when the leaf then has room: a push is a copy of up to half a leaf,
//     worth it only if it buys the next inserts room too;
//   - the sibling is locked after the parent, as balanceLeaf does: a thread
//     holding it reached it through the parent before we locked the parent,
//     and only goes down from there.

// pushMinFreeDiv: a sibling must have 1/pushMinFreeDiv of a leaf's data area
// free to take a push (Tree.pushMinFree).
const pushMinFreeDiv = 8

// pushLeaf tries to make room for an insert of extra bytes at Slots[0] by
// moving items into a sibling; it reports whether the leaf now has room.
// The parent is write-locked (splitLeaf's precondition); on false nothing
// changed, except that a sibling may have been CoW'd into tr.
func (t *Tree) pushLeaf(tr *Trans, p *Path, key Key, extra int) (bool, error) {
	e := t.eng
	parent := p.Nodes[1]
	if e.noLeafPush || parent == nil || tr.log != nil || t == e.logTree || p.Slots[0] >= p.Nodes[0].ItemCount() {
		return false, nil
	}
	if ok, err := t.pushRight(tr, p, extra); ok || err != nil {
		return ok, err
	}
	return t.pushLeft(tr, p, key, extra)
}

// cachedSibling returns parent's child at slot if it is in memory and has
// room enough to be worth a push, else nil.
func (t *Tree) cachedSibling(parent *ExtentBuffer, slot int) *ExtentBuffer {
	e := t.eng
	if slot < 0 || slot >= parent.ItemCount() {
		return nil
	}
	sib, ok := e.cache.Get(uint64(parent.BlockPtr(slot)))
	if !ok || sib.Generation() != parent.PtrGeneration(slot) {
		return nil
	}
	// Unlocked, a hint only: checked again under the lock.
	sib.lock.RLock()
	free := sib.leafFree()
	sib.lock.RUnlock()
	if free < t.pushMinFree() {
		return nil
	}
	return sib
}

// pushMinFree is the room a sibling must have to take a push.
func (t *Tree) pushMinFree() int { return t.eng.geo.leafData / pushMinFreeDiv }

// pushShare is how many of the leaf's movable items (at most avail, item i
// of them size(i) bytes, nearest the sibling first) move into sib: the
// fewest that give the leaf extra bytes of room, then more while the leaf
// stays the fuller of the two; 0 when sib cannot take enough.
func (t *Tree) pushShare(leaf, sib *ExtentBuffer, avail, extra int, size func(i int) int) int {
	room := sib.leafFree()
	if room < t.pushMinFree() {
		return 0
	}
	count, moved := 0, 0
	for count < avail {
		sz := size(count)
		if moved+sz > room {
			break
		}
		fits := leaf.leafFree()+moved >= extra
		if fits && leaf.leafUsed()-moved+extra-sz < sib.leafUsed()+moved+sz {
			break // one more would make the sibling the fuller
		}
		count, moved = count+1, moved+sz
	}
	if leaf.leafFree()+moved < extra {
		return 0
	}
	return count
}

// pushRight moves the leaf's last items, all after Slots[0], to the front
// of its right sibling.
func (t *Tree) pushRight(tr *Trans, p *Path, extra int) (bool, error) {
	leaf, parent := p.Nodes[0], p.Nodes[1]
	slot, pslot := p.Slots[0], p.Slots[1]
	n := leaf.ItemCount()
	if t.cachedSibling(parent, pslot+1) == nil {
		return false, nil
	}
	right, err := t.lockChildForWrite(tr, parent, pslot+1, p.reserveOK)
	if err != nil {
		return false, err
	}
	defer right.lock.Unlock()
	count := t.pushShare(leaf, right, n-slot, extra, func(i int) int { return leaf.itemsUsed(n-1-i, n-i) })
	if count == 0 {
		return false, nil
	}
	leafMoveItems(leaf, n-count, n, right, 0)
	parent.setPtr(pslot+1, right.Key(0), right.bytenr, right.Generation())
	p.upper, p.hasUpper = right.Key(0), true
	t.stats.leafPushes.Add(1)
	return true, nil
}

// pushLeft moves the leaf's first items, all before Slots[0], to the end of
// its left sibling.
func (t *Tree) pushLeft(tr *Trans, p *Path, key Key, extra int) (bool, error) {
	leaf, parent := p.Nodes[0], p.Nodes[1]
	slot, pslot := p.Slots[0], p.Slots[1]
	if slot == 0 || t.cachedSibling(parent, pslot-1) == nil {
		return false, nil
	}
	left, err := t.lockChildForWrite(tr, parent, pslot-1, p.reserveOK)
	if err != nil {
		return false, err
	}
	defer left.lock.Unlock()
	m := t.pushShare(leaf, left, slot, extra, func(i int) int { return leaf.itemsUsed(i, i+1) })
	if m == 0 {
		return false, nil
	}
	leafMoveItems(leaf, 0, m, left, left.ItemCount())
	// The leaf's lower bound is its new first key — the new item's, when
	// it goes first.
	first := key
	if m < slot {
		first = leaf.Key(0)
	}
	parent.setPtr(pslot, first, leaf.bytenr, leaf.Generation())
	p.lower, p.hasLower = first, true
	p.Slots[0] = slot - m
	t.stats.leafPushes.Add(1)
	return true, nil
}
