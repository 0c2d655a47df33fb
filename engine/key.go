package engine

import "fmt"

// Key orders every item of every tree: (ObjectID, Type, Offset), compared in
// that order, as btrfs's struct btrfs_key.
type Key struct {
	ObjectID uint64
	Type     uint8
	Offset   uint64
}

// Item types (btrfs's numbering where btrfs has the item).
const (
	TypeInodeItem       uint8 = 1
	TypeInodeRef        uint8 = 12
	TypeXattrItem       uint8 = 24 // an extended attribute: (ino, 24, crc32c(name))
	TypeOrphanItem      uint8 = 48 // an unlinked inode still open: (OrphanObjectID, 48, ino)
	TypeDirLogIndex     uint8 = 72
	TypeDirItem         uint8 = 84
	TypeDirIndex        uint8 = 96
	TypeExtentData      uint8 = 108
	TypeExtentCsum      uint8 = 128
	TypeRootItem        uint8 = 132
	TypeFreeSpaceExtent uint8 = 199
	// TypeTest is for engine tests and benchmarks: opaque items.
	TypeTest uint8 = 250
)

// Tree ids.
const (
	RootTreeID      uint64 = 1
	FSTreeID        uint64 = 5
	CsumTreeID      uint64 = 7
	FreeSpaceTreeID uint64 = 10
)

// MinKey and MaxKey bound every key.
var (
	MinKey = Key{}
	MaxKey = Key{^uint64(0), ^uint8(0), ^uint64(0)}
)

// Compare returns -1, 0 or +1.
func (k Key) Compare(o Key) int {
	switch {
	case k.ObjectID < o.ObjectID:
		return -1
	case k.ObjectID > o.ObjectID:
		return 1
	case k.Type < o.Type:
		return -1
	case k.Type > o.Type:
		return 1
	case k.Offset < o.Offset:
		return -1
	case k.Offset > o.Offset:
		return 1
	}
	return 0
}

// Less reports k < o.
func (k Key) Less(o Key) bool { return k.Compare(o) < 0 }

// Next returns the smallest key greater than k (MaxKey for MaxKey).
func (k Key) Next() Key {
	switch {
	case k.Offset != ^uint64(0):
		k.Offset++
	case k.Type != ^uint8(0):
		k.Type++
		k.Offset = 0
	case k.ObjectID != ^uint64(0):
		k.ObjectID++
		k.Type, k.Offset = 0, 0
	}
	return k
}

// Prev returns the largest key smaller than k (MinKey for MinKey).
func (k Key) Prev() Key {
	switch {
	case k.Offset != 0:
		k.Offset--
	case k.Type != 0:
		k.Type--
		k.Offset = ^uint64(0)
	case k.ObjectID != 0:
		k.ObjectID--
		k.Type, k.Offset = ^uint8(0), ^uint64(0)
	}
	return k
}

func (k Key) String() string { return fmt.Sprintf("(%d %d %d)", k.ObjectID, k.Type, k.Offset) }
