package store

import (
	"hash/crc32"

	"ustore/engine"
)

func inodeKey(ino uint64) engine.Key {
	return engine.Key{ObjectID: ino, Type: engine.TypeInodeItem}
}

func refKey(ino, dir uint64) engine.Key {
	return engine.Key{ObjectID: ino, Type: engine.TypeInodeRef, Offset: dir}
}

func dirItemKey(dir uint64, name string) engine.Key {
	return engine.Key{ObjectID: dir, Type: engine.TypeDirItem, Offset: nameHash(name)}
}

func dirIndexKey(dir, index uint64) engine.Key {
	return engine.Key{ObjectID: dir, Type: engine.TypeDirIndex, Offset: index}
}

func extentKey(ino, off uint64) engine.Key {
	return engine.Key{ObjectID: ino, Type: engine.TypeExtentData, Offset: off}
}

func csumKey(bytenr uint64) engine.Key {
	return engine.Key{ObjectID: engine.CsumObjectID, Type: engine.TypeExtentCsum, Offset: bytenr}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// nameHash is a DIR_ITEM's key offset: crc32c of the name, as btrfs.
// Names that collide share the item.
func nameHash(name string) uint64 {
	return uint64(crc32.Checksum([]byte(name), castagnoli))
}
