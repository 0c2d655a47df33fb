package engine

import "ustore/internal/assert"

// Leaf editing primitives. Each keeps the leaf packed: item headers from the
// front in key order, data from the back, item i's data directly below item
// i-1's. The caller holds the leaf's write lock and has checked the room.

// leafMakeRoom opens count item slots at slot for payloads of the given
// sizes (total bytes in all) and returns the region where their data goes:
// [lo, hi), item slot's payload at the top, the last one's at the bottom.
func (eb *ExtentBuffer) leafMakeRoom(slot int, keys []Key, sizes []uint32, total int) (lo, hi int) {
	n := eb.ItemCount()
	count := len(keys)
	assert.That(eb.leafFree() >= total+count*itemHeaderSize, "leafMakeRoom: no room")
	hi = len(eb.data)
	if slot > 0 {
		hi = eb.itemOffset(slot - 1)
	}
	start := eb.dataStart()
	if slot < n {
		// Shift the data of items [slot, n) down by total, and their
		// headers right by count.
		copy(eb.data[start-total:], eb.data[start:hi])
		for i := slot; i < n; i++ {
			h := eb.itemHeader(i)
			le.PutUint32(h[keySize:], le.Uint32(h[keySize:])-uint32(total))
		}
		from := headerSize + slot*itemHeaderSize
		copy(eb.data[from+count*itemHeaderSize:], eb.data[from:headerSize+n*itemHeaderSize])
	}
	off := hi
	for i, k := range keys {
		off -= int(sizes[i])
		eb.setItem(slot+i, k, off, int(sizes[i]))
	}
	eb.setItemCount(n + count)
	return hi - total, hi
}

// leafDeleteItems removes items [slot, slot+count).
func (eb *ExtentBuffer) leafDeleteItems(slot, count int) {
	n := eb.ItemCount()
	assert.That(slot >= 0 && count > 0 && slot+count <= n, "leafDeleteItems: range")
	hi := len(eb.data)
	if slot > 0 {
		hi = eb.itemOffset(slot - 1)
	}
	lo := eb.itemOffset(slot + count - 1)
	gap := hi - lo
	if slot+count < n {
		start := eb.dataStart()
		copy(eb.data[start+gap:], eb.data[start:lo])
		for i := slot + count; i < n; i++ {
			h := eb.itemHeader(i)
			le.PutUint32(h[keySize:], le.Uint32(h[keySize:])+uint32(gap))
		}
		from := headerSize + (slot+count)*itemHeaderSize
		copy(eb.data[headerSize+slot*itemHeaderSize:], eb.data[from:headerSize+n*itemHeaderSize])
	}
	eb.setItemCount(n - count)
	clear(eb.data[headerSize+(n-count)*itemHeaderSize : headerSize+n*itemHeaderSize])
}

// leafResizeItem changes item slot's size, keeping the first min(old, new)
// bytes of its payload (new bytes are zero): extend or truncate in place.
func (eb *ExtentBuffer) leafResizeItem(slot, size int) {
	n := eb.ItemCount()
	old := eb.ItemSize(slot)
	delta := size - old // > 0 grows
	assert.That(delta <= eb.leafFree(), "leafResizeItem: no room")
	if delta == 0 {
		return
	}
	start := eb.dataStart()
	off := eb.itemOffset(slot)
	// The payload keeps its start... but data is packed downward, so the
	// item's bottom moves: move [start, off+min) down by delta.
	keep := min(old, size)
	copy(eb.data[start-delta:], eb.data[start:off+keep])
	for i := slot; i < n; i++ {
		h := eb.itemHeader(i)
		le.PutUint32(h[keySize:], uint32(int(le.Uint32(h[keySize:]))-delta))
	}
	le.PutUint32(eb.itemHeader(slot)[keySize+4:], uint32(size))
	if delta > 0 {
		newOff := off - delta
		clear(eb.data[newOff+old : newOff+size])
	} else {
		clear(eb.data[start : start-delta])
	}
}

// leafMoveItems appends src's items [from, to) to dst at slot (dst's
// neighbours must keep key order) and deletes them from src.
func leafMoveItems(src *ExtentBuffer, from, to int, dst *ExtentBuffer, slot int) {
	if from >= to {
		return
	}
	keys := make([]Key, 0, to-from)
	sizes := make([]uint32, 0, to-from)
	for i := from; i < to; i++ {
		keys = append(keys, src.Key(i))
		sizes = append(sizes, uint32(src.ItemSize(i)))
	}
	total := src.itemsUsed(from, to) - (to-from)*itemHeaderSize
	lo, hi := dst.leafMakeRoom(slot, keys, sizes, total)
	// Items [from, to) are packed in src exactly as dst wants them: one copy.
	srcHi := len(src.data)
	if from > 0 {
		srcHi = src.itemOffset(from - 1)
	}
	copy(dst.data[lo:hi], src.data[srcHi-total:srcHi])
	src.leafDeleteItems(from, to-from)
}

// Internal node primitives.

func (eb *ExtentBuffer) nodeInsertPtr(slot int, k Key, bytenr Bytenr, gen Generation) {
	n := eb.ItemCount()
	from := headerSize + slot*ptrSize
	copy(eb.data[from+ptrSize:], eb.data[from:headerSize+n*ptrSize])
	eb.setItemCount(n + 1)
	eb.setPtr(slot, k, bytenr, gen)
}

func (eb *ExtentBuffer) nodeDeletePtrs(slot, count int) {
	n := eb.ItemCount()
	from := headerSize + (slot+count)*ptrSize
	copy(eb.data[headerSize+slot*ptrSize:], eb.data[from:headerSize+n*ptrSize])
	eb.setItemCount(n - count)
	clear(eb.data[headerSize+(n-count)*ptrSize : headerSize+n*ptrSize])
}

// nodeMovePtrs moves src's pointers [from, to) into dst at slot.
func nodeMovePtrs(src *ExtentBuffer, from, to int, dst *ExtentBuffer, slot int) {
	count := to - from
	if count <= 0 {
		return
	}
	n := dst.ItemCount()
	at := headerSize + slot*ptrSize
	copy(dst.data[at+count*ptrSize:], dst.data[at:headerSize+n*ptrSize])
	copy(dst.data[at:], src.data[headerSize+from*ptrSize:headerSize+to*ptrSize])
	dst.setItemCount(n + count)
	src.nodeDeletePtrs(from, count)
}
