package engine

import (
	"fmt"

	"ustore/internal/assert"
)

// ItemBatch is a run of new items with consecutive keys — no existing item
// lies between the first and the last — inserted with one pass over their
// sizes and one bulk copy of their data per leaf (the 2021 btrfs
// bulk-insertion lesson). TotalDataSize is computed once, by the builder.
//
// Data holds the payloads back to front — the last item's first — which is
// how they lie in a leaf (item data grows down from the end of the node), so
// the payloads of any run of items are one contiguous piece of Data.
type ItemBatch struct {
	Keys          []Key
	DataSizes     []uint32
	TotalDataSize uint32
	Count         int
	Data          []byte
}

// NewItemBatch builds a batch from sorted keys and their payloads.
func NewItemBatch(keys []Key, payloads [][]byte) (ItemBatch, error) {
	b := ItemBatch{Keys: keys, DataSizes: make([]uint32, len(keys)), Count: len(keys)}
	if len(keys) != len(payloads) {
		return b, fmt.Errorf("engine: item batch: %d keys, %d payloads", len(keys), len(payloads))
	}
	for i, p := range payloads {
		if i > 0 && !keys[i-1].Less(keys[i]) {
			return b, fmt.Errorf("engine: item batch: key %v not above %v", keys[i], keys[i-1])
		}
		b.DataSizes[i] = uint32(len(p))
		b.TotalDataSize += uint32(len(p))
	}
	b.Data = make([]byte, b.TotalDataSize)
	end := len(b.Data)
	for _, p := range payloads {
		end -= len(p)
		copy(b.Data[end:], p)
	}
	return b, nil
}

// InsertItem inserts one item; ErrExists if the key is present.
func (t *Tree) InsertItem(tr *Trans, key Key, data []byte) error {
	b := ItemBatch{Keys: []Key{key}, DataSizes: []uint32{uint32(len(data))}, TotalDataSize: uint32(len(data)), Count: 1, Data: data}
	return t.InsertItems(tr, b)
}

// InsertItems inserts a batch. Items go into each leaf as a run: as many as
// fit and belong there, then the search moves on for the rest.
func (t *Tree) InsertItems(tr *Trans, b ItemBatch) error {
	geo := t.eng.geo
	for _, sz := range b.DataSizes {
		if int(sz) > geo.itemDataMax {
			return fmt.Errorf("%w: %d bytes, limit %d", ErrItemTooLarge, sz, geo.itemDataMax)
		}
	}
	if b.Count == 0 {
		return nil
	}
	// All or nothing: no item may exist from the first key to the last (the
	// batch contract), checked before anything is inserted. The caller owns
	// the range (a directory's index range, under its inode's lock), so no
	// other writer can insert into it between the check and the insert. A
	// lone item's own search finds a clash; a batch that fits in its first
	// key's leaf is checked and inserted by one descent (insertInLeaf); one
	// that does not is checked by a search of its own first.
	if b.Count > 1 {
		inserted, err := t.insertInLeaf(tr, b)
		if err != nil || inserted {
			return err
		}
		if err := t.checkBatchRange(b); err != nil {
			return err
		}
	}
	var p Path
	defer p.Release()
	done := 0
	dataEnd := len(b.Data) // payloads of items [done, Count) end here
	for done < b.Count {
		first := int(b.DataSizes[done]) + itemHeaderSize
		found, err := t.SearchSlot(tr, b.Keys[done], &p, first, true)
		if err != nil {
			return err
		}
		if found {
			return fmt.Errorf("%w: %v in tree %d", ErrExists, b.Keys[done], t.id)
		}
		leaf, slot := p.Leaf()
		// The run: items that fit, sort before the leaf's next item and
		// below the leaf's upper bound.
		free := leaf.leafFree()
		end, bytes := done, 0
		for end < b.Count {
			need := int(b.DataSizes[end]) + itemHeaderSize
			k := b.Keys[end]
			if need > free-bytes ||
				(slot < leaf.ItemCount() && !k.Less(leaf.Key(slot))) ||
				(p.hasUpper && !k.Less(p.upper)) {
				break
			}
			bytes += need
			end++
		}
		assert.That(end > done, "InsertItems: the first item of the run must fit")
		runData := bytes - (end-done)*itemHeaderSize
		lo, hi := leaf.leafMakeRoom(slot, b.Keys[done:end], b.DataSizes[done:end], runData)
		copy(leaf.data[lo:hi], b.Data[dataEnd-runData:dataEnd])
		dataEnd -= runData
		t.stats.itemsInserted.Add(uint64(end - done))
		done = end
		p.Release()
	}
	return nil
}

// insertInLeaf inserts batch b whole into its first key's leaf when it
// fits there, and reports whether it did: one descent for the batch, its
// clash check made in that leaf. The descent changes the leaf in place
// (insLen 0: the leaf's write lock only, no split), so a batch that does
// not fit, or is refused, leaves the tree's shape as it was — a split
// made for items that then are not inserted would leave a leaf under its
// fill bound. TotalDataSize is the builder's sum, not summed again here.
func (t *Tree) insertInLeaf(tr *Trans, b ItemBatch) (bool, error) {
	if int(b.TotalDataSize) != len(b.Data) {
		return false, fmt.Errorf("engine: item batch: %d bytes of data, TotalDataSize %d", len(b.Data), b.TotalDataSize)
	}
	var p Path
	defer p.Release()
	found, err := t.SearchSlot(tr, b.Keys[0], &p, 0, true)
	if err != nil {
		return false, err
	}
	if found {
		return false, fmt.Errorf("%w: %v in tree %d", ErrExists, b.Keys[0], t.id)
	}
	leaf, slot := p.Leaf()
	last := b.Keys[b.Count-1]
	if slot < leaf.ItemCount() && !last.Less(leaf.Key(slot)) {
		// The leaf's next item lies between the batch's first key and
		// its last.
		return false, fmt.Errorf("%w: %v in tree %d", ErrExists, leaf.Key(slot), t.id)
	}
	if int(b.TotalDataSize)+b.Count*itemHeaderSize > leaf.leafFree() || p.hasUpper && !last.Less(p.upper) {
		return false, nil
	}
	lo, hi := leaf.leafMakeRoom(slot, b.Keys, b.DataSizes, int(b.TotalDataSize))
	copy(leaf.data[lo:hi], b.Data)
	t.stats.itemsInserted.Add(uint64(b.Count))
	return true, nil
}

// checkBatchRange returns ErrExists if an item lies between b's first key
// and its last.
func (t *Tree) checkBatchRange(b ItemBatch) error {
	var clash error
	if err := t.Iterate(b.Keys[0], func(k Key, _ []byte) bool {
		if !b.Keys[b.Count-1].Less(k) {
			clash = fmt.Errorf("%w: %v in tree %d", ErrExists, k, t.id)
		}
		return false
	}); err != nil {
		return err
	}
	return clash
}

// Lookup returns a copy of the item's payload, or ErrNotFound.
func (t *Tree) Lookup(key Key) ([]byte, error) {
	var p Path
	defer p.Release()
	found, err := t.SearchSlot(nil, key, &p, 0, false)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, ErrNotFound
	}
	leaf, slot := p.Leaf()
	return append([]byte(nil), leaf.ItemData(slot)...), nil
}

// UpdateItem calls fn with the item's payload to change in place, under the
// leaf's write lock only (a search with insLen 0: no parent write lock, no
// split) unless the leaf must be CoW'd first.
func (t *Tree) UpdateItem(tr *Trans, key Key, fn func(data []byte)) error {
	var p Path
	defer p.Release()
	found, err := t.SearchSlot(tr, key, &p, 0, true)
	if err != nil {
		return err
	}
	if !found {
		return ErrNotFound
	}
	leaf, slot := p.Leaf()
	fn(leaf.ItemData(slot))
	return nil
}

// ResizeItem extends (zero-filled) or truncates an item's payload in place.
func (t *Tree) ResizeItem(tr *Trans, key Key, size int) error {
	if size > t.eng.geo.itemDataMax || size < 0 {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrItemTooLarge, size, t.eng.geo.itemDataMax)
	}
	var p Path
	defer p.Release()
	// Probe the current size with a read-only search, then search for the
	// change: growing may split, shrinking may rebalance.
	cur, err := t.Lookup(key)
	if err != nil {
		return err
	}
	ins := size - len(cur)
	switch {
	case ins == 0:
		return nil
	case ins < 0:
		return t.TruncateItem(tr, key, size)
	}
	for {
		found, err := t.SearchSlot(tr, key, &p, ins, true)
		if err != nil {
			return err
		}
		if !found {
			return ErrNotFound
		}
		leaf, slot := p.Leaf()
		if size-leaf.ItemSize(slot) <= leaf.leafFree() {
			break
		}
		// A search splits only for a miss: split this leaf now (the parent
		// is write-locked, write level 1), then search again — the item
		// may have moved to the new right half.
		if err := t.splitLeaf(tr, &p, key, size-leaf.ItemSize(slot), true); err != nil {
			return err
		}
		p.Release()
	}
	leaf, slot := p.Leaf()
	leaf.leafResizeItem(slot, size)
	return nil
}

// TruncateItem shortens an item's payload to size bytes in place, in one
// descent: the caller knows the item is at least that long (ResizeItem
// first looks the item up to learn whether it grows). An item shorter
// than size is an error, and is left as it was.
func (t *Tree) TruncateItem(tr *Trans, key Key, size int) error {
	var p Path
	defer p.Release()
	// insLen -1: a search for a deletion, which may rebalance the leaf.
	found, err := t.SearchSlot(tr, key, &p, -1, true)
	if err != nil {
		return err
	}
	if !found {
		return ErrNotFound
	}
	leaf, slot := p.Leaf()
	switch cur := leaf.ItemSize(slot); {
	case size < 0 || size > cur:
		return fmt.Errorf("engine: truncate item %v in tree %d to %d bytes: it has %d", key, t.id, size, cur)
	case size == cur:
		return nil
	}
	leaf.leafResizeItem(slot, size)
	if err := t.balanceLeaf(tr, &p); err != nil {
		return err
	}
	p.Release()
	return t.collapseRoot(tr)
}

// DeleteItem deletes one item, or returns ErrNotFound.
func (t *Tree) DeleteItem(tr *Trans, key Key) error {
	n, err := t.DeleteRange(tr, key, key)
	if err == nil && n == 0 {
		return ErrNotFound
	}
	return err
}

// DeleteRange deletes every item with from <= key <= to and returns how
// many it deleted.
func (t *Tree) DeleteRange(tr *Trans, from, to Key) (int, error) {
	var p Path
	defer p.Release()
	deleted := 0
	for {
		if _, err := t.SearchSlot(tr, from, &p, -1, true); err != nil {
			return deleted, err
		}
		leaf, slot := p.Leaf()
		end := slot
		for end < leaf.ItemCount() && !to.Less(leaf.Key(end)) {
			end++
		}
		if end == slot {
			// Nothing here; the range may continue in the next leaf only if
			// the leaf ended before to.
			if slot < leaf.ItemCount() || !p.hasUpper || to.Less(p.upper) {
				p.Release()
				return deleted, t.collapseRoot(tr)
			}
			from = p.upper
			p.Release()
			continue
		}
		// The range ends in this leaf when an item above to stays in it
		// or the next leaf's keys start above to: then this descent was
		// the only one (a DeleteItem's), with no second to find nothing.
		more := end == leaf.ItemCount() && p.hasUpper && !to.Less(p.upper)
		leaf.leafDeleteItems(slot, end-slot)
		deleted += end - slot
		if err := t.balanceLeaf(tr, &p); err != nil {
			return deleted, err
		}
		p.Release()
		if !more {
			return deleted, t.collapseRoot(tr)
		}
	}
}

// collapseRoot replaces an internal root that has one child by that child.
func (t *Tree) collapseRoot(tr *Trans) error {
	t.rootLock.RLock()
	r := t.root
	r.lock.RLock()
	need := r.Level() > 0 && r.ItemCount() == 1
	r.lock.RUnlock()
	t.rootLock.RUnlock()
	if !need {
		return nil
	}
	t.rootLock.Lock()
	defer t.rootLock.Unlock()
	for {
		r = t.root
		r.lock.Lock()
		if r.Level() == 0 || r.ItemCount() != 1 {
			r.lock.Unlock()
			return nil
		}
		child, err := t.eng.readChild(t, r, 0)
		if err != nil {
			r.lock.Unlock()
			return err
		}
		t.setRoot(tr, child)
		t.eng.freeNode(tr, r)
		r.lock.Unlock()
	}
}

// IterateReverse calls fn for each item with key <= from, in descending key
// order, until fn returns false: previous-leaf iteration. The same rules as
// Iterate apply to fn.
func (t *Tree) IterateReverse(from Key, fn func(k Key, data []byte) bool) error {
	var p Path
	defer p.Release()
	for {
		found, err := t.SearchSlot(nil, from, &p, 0, false)
		if err != nil {
			return err
		}
		leaf, slot := p.Leaf()
		if !found {
			slot--
		}
		for i := slot; i >= 0; i-- {
			if !fn(leaf.Key(i), leaf.ItemData(i)) {
				return nil
			}
		}
		if !p.hasLower || p.lower == MinKey {
			return nil
		}
		from = p.lower.Prev()
		p.Release()
	}
}

// IterateFromFloor is Iterate from the item just below from: fn sees the
// item with the greatest key < from (if any), then each item with key >=
// from in key order, until it returns false. It is one descent where that
// item shares from's leaf — for a range item that may start before from
// and cover it (a checksum item), where IterateReverse then Iterate would
// search twice. The same rules as Iterate apply to fn.
func (t *Tree) IterateFromFloor(from Key, fn func(k Key, data []byte) bool) error {
	var p Path
	defer p.Release()
	if _, err := t.SearchSlot(nil, from, &p, 0, false); err != nil {
		return err
	}
	leaf, slot := p.Leaf()
	switch {
	case slot > 0:
		if !fn(leaf.Key(slot-1), leaf.ItemData(slot-1)) {
			return nil
		}
	case p.hasLower && p.lower != MinKey:
		// The item below is the previous leaf's last: a second descent,
		// once in a leaf's worth of keys.
		lower := p.lower.Prev()
		p.Release()
		more := true
		if err := t.IterateReverse(lower, func(k Key, data []byte) bool { more = fn(k, data); return false }); err != nil || !more {
			return err
		}
		return t.Iterate(from, fn)
	}
	return t.iterateOn(&p, slot, fn)
}

// Iterate calls fn for each item with key >= from, in key order, until fn
// returns false. fn's data aliases the leaf: copy what you keep. The leaf is
// read-locked while fn runs: fn must not modify the tree.
func (t *Tree) Iterate(from Key, fn func(k Key, data []byte) bool) error {
	var p Path
	defer p.Release()
	if _, err := t.SearchSlot(nil, from, &p, 0, false); err != nil {
		return err
	}
	_, slot := p.Leaf()
	return t.iterateOn(&p, slot, fn)
}

// iterateOn calls fn for the items of p's leaf from slot on, then for those
// of each leaf after it, until fn returns false (Iterate's walk, from a
// descent already made). p is released and reused for each next leaf.
func (t *Tree) iterateOn(p *Path, slot int, fn func(k Key, data []byte) bool) error {
	for {
		leaf, _ := p.Leaf()
		for i := slot; i < leaf.ItemCount(); i++ {
			if !fn(leaf.Key(i), leaf.ItemData(i)) {
				return nil
			}
		}
		if !p.hasUpper {
			return nil
		}
		from := p.upper
		p.Release()
		if _, err := t.SearchSlot(nil, from, p, 0, false); err != nil {
			return err
		}
		_, slot = p.Leaf()
	}
}
