package engine

import (
	"fmt"
	"sync/atomic"

	"ustore/lock"
)

// ExtentBuffer is one tree node in memory (btrfs: struct extent_buffer): the
// node's bytes exactly as they are on disk, plus its lock and dirty state.
//
// Who touches what: data is read under the node's read lock and written
// under its write lock, and only while the node's generation is the running
// transaction's (older nodes are CoW'd first, never changed). A node of a
// transaction that has ended is immutable. bytenr never changes.
type ExtentBuffer struct {
	lock   lock.RWMutex
	bytenr Bytenr
	data   []byte
	dirty  atomic.Bool // written in this generation, not yet on disk
}

func newExtentBuffer(bytenr Bytenr, data []byte, class *lock.Class) *ExtentBuffer {
	eb := &ExtentBuffer{bytenr: bytenr, data: data}
	eb.lock.Init(class, uint64(bytenr))
	return eb
}

// CacheBytes and Pinned make an ExtentBuffer an evict.Entry: dirty nodes are
// pinned until their transaction is on disk.
func (eb *ExtentBuffer) CacheBytes() int64 { return int64(len(eb.data)) + 128 }
func (eb *ExtentBuffer) Pinned() bool      { return eb.dirty.Load() }

func (eb *ExtentBuffer) Bytenr() Bytenr { return eb.bytenr }
func (eb *ExtentBuffer) Level() int     { return int(eb.data[hdrLevel]) }
func (eb *ExtentBuffer) IsLeaf() bool   { return eb.data[hdrLevel] == 0 }
func (eb *ExtentBuffer) Generation() Generation {
	return Generation(le.Uint64(eb.data[hdrGeneration:]))
}
func (eb *ExtentBuffer) Owner() uint64 { return le.Uint64(eb.data[hdrOwner:]) }

// ItemCount is the number of items (leaf) or pointers (internal node).
// btrfs: nritems.
func (eb *ExtentBuffer) ItemCount() int { return int(le.Uint32(eb.data[hdrNritems:])) }

func (eb *ExtentBuffer) setItemCount(n int)         { le.PutUint32(eb.data[hdrNritems:], uint32(n)) }
func (eb *ExtentBuffer) setGeneration(g Generation) { le.PutUint64(eb.data[hdrGeneration:], uint64(g)) }
func (eb *ExtentBuffer) setBytenrHeader(b Bytenr)   { le.PutUint64(eb.data[hdrBytenr:], uint64(b)) }

// initHeader formats an empty node.
func (eb *ExtentBuffer) initHeader(fsid [16]byte, gen Generation, owner uint64, level int) {
	clear(eb.data)
	eb.setHeader(fsid, gen, owner, level)
}

// setHeader writes the header fields of a node whose bytes are already zero
// (a fresh buffer) or about to be overwritten (a CoW copy).
func (eb *ExtentBuffer) setHeader(fsid [16]byte, gen Generation, owner uint64, level int) {
	copy(eb.data[hdrFsid:], fsid[:])
	le.PutUint64(eb.data[hdrBytenr:], uint64(eb.bytenr))
	le.PutUint64(eb.data[hdrGeneration:], uint64(gen))
	le.PutUint64(eb.data[hdrOwner:], owner)
	eb.data[hdrLevel] = uint8(level)
}

// Key returns the key of item or pointer i.
func (eb *ExtentBuffer) Key(i int) Key {
	if eb.IsLeaf() {
		return getKey(eb.data[headerSize+i*itemHeaderSize:])
	}
	return getKey(eb.data[headerSize+i*ptrSize:])
}

// Leaf accessors.

func (eb *ExtentBuffer) itemHeader(i int) []byte {
	o := headerSize + i*itemHeaderSize
	return eb.data[o : o+itemHeaderSize]
}
func (eb *ExtentBuffer) itemOffset(i int) int { return int(le.Uint32(eb.itemHeader(i)[keySize:])) }
func (eb *ExtentBuffer) ItemSize(i int) int   { return int(le.Uint32(eb.itemHeader(i)[keySize+4:])) }

// ItemData returns item i's payload, aliasing the node: valid while the
// caller holds the node's lock.
func (eb *ExtentBuffer) ItemData(i int) []byte {
	o := eb.itemOffset(i)
	return eb.data[o : o+eb.ItemSize(i)]
}

func (eb *ExtentBuffer) setItem(i int, k Key, off, size int) {
	h := eb.itemHeader(i)
	putKey(h, k)
	le.PutUint32(h[keySize:], uint32(off))
	le.PutUint32(h[keySize+4:], uint32(size))
}

// dataStart is where the packed item data begins (it grows down from the
// end of the node).
func (eb *ExtentBuffer) dataStart() int {
	n := eb.ItemCount()
	if n == 0 {
		return len(eb.data)
	}
	return eb.itemOffset(n - 1)
}

// leafUsed is the bytes of item headers and data in a leaf.
func (eb *ExtentBuffer) leafUsed() int {
	return eb.ItemCount()*itemHeaderSize + len(eb.data) - eb.dataStart()
}

// leafFree is the room left between the item headers and the data.
func (eb *ExtentBuffer) leafFree() int {
	return eb.dataStart() - (headerSize + eb.ItemCount()*itemHeaderSize)
}

// itemsUsed is the bytes items [from, to) use, headers included.
func (eb *ExtentBuffer) itemsUsed(from, to int) int {
	if from >= to {
		return 0
	}
	end := len(eb.data)
	if from > 0 {
		end = eb.itemOffset(from - 1)
	}
	return (to-from)*itemHeaderSize + end - eb.itemOffset(to-1)
}

// Internal node accessors.

func (eb *ExtentBuffer) ptr(i int) []byte {
	o := headerSize + i*ptrSize
	return eb.data[o : o+ptrSize]
}
func (eb *ExtentBuffer) BlockPtr(i int) Bytenr { return Bytenr(le.Uint64(eb.ptr(i)[keySize:])) }
func (eb *ExtentBuffer) PtrGeneration(i int) Generation {
	return Generation(le.Uint64(eb.ptr(i)[keySize+8:]))
}

func (eb *ExtentBuffer) setPtr(i int, k Key, bytenr Bytenr, gen Generation) {
	p := eb.ptr(i)
	putKey(p, k)
	le.PutUint64(p[keySize:], uint64(bytenr))
	le.PutUint64(p[keySize+8:], uint64(gen))
}

func (eb *ExtentBuffer) setKey(i int, k Key) {
	if eb.IsLeaf() {
		putKey(eb.itemHeader(i), k)
	} else {
		putKey(eb.ptr(i), k)
	}
}

// csum computes the node checksum.
func (eb *ExtentBuffer) csum() uint32 { return crc32c(eb.data[hdrFsid:]) }

// seal stores the checksum: the last step before the node is written.
func (eb *ExtentBuffer) seal() { le.PutUint32(eb.data[hdrCsum:], eb.csum()) }

// storedCsum is the checksum seal stored (or the disk held).
func (eb *ExtentBuffer) storedCsum() uint32 { return le.Uint32(eb.data[hdrCsum:]) }

// verify checks a node read from disk: checksum, fsid, bytenr, owner and
// level. Any mismatch is ErrCorruption: the node is never used.
func (eb *ExtentBuffer) verify(fsid [16]byte, owner uint64, level int, nodeSize int) error {
	if got, want := eb.csum(), eb.storedCsum(); got != want {
		return fmt.Errorf("%w: node %d: checksum %#x, stored %#x", ErrCorruption, eb.bytenr, got, want)
	}
	if [16]byte(eb.data[hdrFsid:hdrFsid+16]) != fsid {
		return fmt.Errorf("%w: node %d: fsid of another filesystem", ErrCorruption, eb.bytenr)
	}
	if b := Bytenr(le.Uint64(eb.data[hdrBytenr:])); b != eb.bytenr {
		return fmt.Errorf("%w: node %d: header says bytenr %d (misdirected write?)", ErrCorruption, eb.bytenr, b)
	}
	if owner != 0 && eb.Owner() != owner {
		return fmt.Errorf("%w: node %d: owner %d, expected tree %d", ErrCorruption, eb.bytenr, eb.Owner(), owner)
	}
	if level >= 0 && eb.Level() != level {
		return fmt.Errorf("%w: node %d: level %d, expected %d", ErrCorruption, eb.bytenr, eb.Level(), level)
	}
	if err := eb.checkShape(nodeSize); err != nil {
		return err
	}
	return nil
}

// checkShape validates counts and item offsets so that no accessor can slice
// out of bounds, whatever the bytes.
func (eb *ExtentBuffer) checkShape(nodeSize int) error {
	n := eb.ItemCount()
	if eb.IsLeaf() {
		if headerSize+n*itemHeaderSize > nodeSize {
			return fmt.Errorf("%w: leaf %d: %d items do not fit", ErrCorruption, eb.bytenr, n)
		}
		end := nodeSize
		for i := 0; i < n; i++ {
			off, size := eb.itemOffset(i), eb.ItemSize(i)
			if off+size != end || off < headerSize+n*itemHeaderSize {
				return fmt.Errorf("%w: leaf %d: item %d data [%d,%d) misplaced", ErrCorruption, eb.bytenr, i, off, off+size)
			}
			end = off
		}
		return nil
	}
	if n == 0 || n > (nodeSize-headerSize)/ptrSize || eb.Level() > maxLevel {
		return fmt.Errorf("%w: node %d: %d pointers at level %d", ErrCorruption, eb.bytenr, n, eb.Level())
	}
	return nil
}
