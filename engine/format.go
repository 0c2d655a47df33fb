package engine

import (
	"encoding/binary"
	"hash/crc32"
)

// On-disk format version 6 (version 1 had no superblock mirrors; version 2
// wrote a superblock per log sync, naming the log root; version 3 had no
// symlinks, XATTR_ITEMs or ORPHAN_ITEMs, which a version 3 binary would
// misread as damage; version 4's log chain records had no delta kind, and
// a version 4 binary would end a chain of deltas at the first; version 5,
// reverted, let a log sync's batch go while the sync ahead flushed). docs/FORMAT.md
// draws every layout; the offsets here are its source of truth.

const (
	FormatVersion = 6
	// SectorSize is the unit of allocation for data; nodes are NodeSize.
	SectorSize = 4096
	// NodeSizeDefault, NodeSizeMin, NodeSizeMax: chosen at mkfs.
	NodeSizeDefault = 16 << 10
	NodeSizeMin     = 4 << 10
	NodeSizeMax     = 64 << 10
	// CsumCRC32C is the only checksum type.
	CsumCRC32C = 1
)

// Superblock slots: a pair written alternately by sequence number, and a
// mirror of each slot superMirrorDistance further on, written in the same
// batch as its primary. The primaries lie in [0, 512 KiB) and the mirrors in
// [512 KiB, 1 MiB), so each half holds one copy of the newest and one of the
// previous superblock: one bad sector, or one lost chunk of up to 512 KiB of
// a striped device, leaves a sound copy of both (docs/design/engine.md §8).
const (
	superSlot0          = 64 << 10
	superSlot1          = 128 << 10
	superMirrorDistance = 512 << 10
	superSize           = 4096
	// firstAllocatable: nothing below it (superblocks and the gap around
	// them) is ever allocated.
	firstAllocatable = 1 << 20
)

// The mirrors lie in their own half of the reserved first MiB.
var (
	_ [superMirrorDistance - (superSlot1 + superSize)]struct{}
	_ [firstAllocatable - (superSlot1 + superMirrorDistance + superSize)]struct{}
)

var superMagic = [8]byte{'_', 'U', 'S', 'T', 'O', 'R', 'E', '1'}

// Node header layout (64 bytes).
const (
	hdrCsum       = 0  // u32 crc32c of [hdrFsid, nodeSize)
	hdrFsid       = 8  // [16]byte
	hdrBytenr     = 24 // u64
	hdrGeneration = 32 // u64
	hdrOwner      = 40 // u64 tree id
	hdrFlags      = 48 // u32
	hdrLevel      = 52 // u8; 0 = leaf
	hdrNritems    = 56 // u32 (btrfs: nritems)
	headerSize    = 64
)

// Leaf item header: key (17) + data offset (u32, from the node start) +
// data size (u32).
const (
	keySize        = 17
	itemHeaderSize = keySize + 8
	// Internal node pointer: key (17) + child bytenr (u64) + child generation (u64).
	ptrSize = keySize + 16
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

var le = binary.LittleEndian

func putKey(b []byte, k Key) {
	le.PutUint64(b[0:], k.ObjectID)
	b[8] = k.Type
	le.PutUint64(b[9:], k.Offset)
}

func getKey(b []byte) Key {
	return Key{ObjectID: le.Uint64(b[0:]), Type: b[8], Offset: le.Uint64(b[9:])}
}

// KeyLen is the length of an encoded key (AppendKey, DecodeKey): the
// encoding of a key in a node.
const KeyLen = keySize

// AppendKey appends k's encoding to b: objectid u64, type u8, offset u64,
// little-endian, as in a node's item headers.
func AppendKey(b []byte, k Key) []byte {
	n := len(b)
	b = append(b, make([]byte, keySize)...)
	putKey(b[n:], k)
	return b
}

// DecodeKey is the key AppendKey encoded at the start of b.
func DecodeKey(b []byte) Key { return getKey(b) }

// Capacity figures of a node size.
type geometry struct {
	nodeSize    int
	leafData    int // bytes for item headers + data in a leaf
	ptrsMax     int // pointers an internal node holds
	itemDataMax int // largest item payload
}

func newGeometry(nodeSize int) geometry {
	g := geometry{nodeSize: nodeSize, leafData: nodeSize - headerSize, ptrsMax: (nodeSize - headerSize) / ptrSize}
	// An item may use at most a quarter of a leaf, so that a split always
	// leaves room for it and both halves stay above the fill bound.
	g.itemDataMax = g.leafData/4 - itemHeaderSize
	return g
}

// Fill bounds: a non-root node holds at least a quarter of its capacity.
func (g geometry) leafMinUsed() int { return g.leafData / 4 }
func (g geometry) ptrsMin() int     { return g.ptrsMax / 4 }
