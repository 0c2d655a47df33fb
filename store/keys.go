package store

import (
	"hash/crc32"

	"ustore/engine"
)

// The fs tree's keys. An inode number becomes a key's objectid in
// engine.InoKey and is read back with Key.Ino; an INODE_REF's offset is
// the parent directory's inode number, read back with refParent.

func inodeKey(ino Ino) engine.Key {
	return engine.InoKey(ino, engine.TypeInodeItem, 0)
}

func refKey(ino, dir Ino) engine.Key {
	return engine.InoKey(ino, engine.TypeInodeRef, uint64(dir))
}

// refParent is the directory an INODE_REF key names.
func refParent(k engine.Key) Ino { return Ino(k.Offset) }

func dirItemKey(dir Ino, name string) engine.Key {
	return engine.InoKey(dir, engine.TypeDirItem, nameHash(name))
}

func dirIndexKey(dir Ino, index uint64) engine.Key {
	return engine.InoKey(dir, engine.TypeDirIndex, index)
}

func extentKey(ino Ino, off uint64) engine.Key {
	return engine.InoKey(ino, engine.TypeExtentData, off)
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
