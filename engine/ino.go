package engine

import "strconv"

// Ino is an inode number (btrfs: ino, the objectid of an inode's items in
// the fs tree and in a log tree). It lives here, beside the fs items whose
// keys it names, because engine is the lowest package that both logtree and
// store import; store re-exports it for the server. On disk it is the u64
// objectid of a key (and the u64 of a directory entry's child or an
// INODE_REF's parent); on the wire it is a u64 too, converted where a
// request is decoded.
type Ino uint64

// RootDirIno is the root directory's inode number; FirstFreeIno the first a
// file may get.
const (
	RootDirIno   Ino = 256
	FirstFreeIno Ino = 257
)

// String writes the inode number in decimal, as Transid and Bytenr.
func (i Ino) String() string { return strconv.FormatUint(uint64(i), 10) }

// InoKey is the key of an item of inode ino: (ino, typ, off). Keys of the fs
// tree and of log trees are made here, so that the inode number becomes a
// plain objectid in one place.
func InoKey(ino Ino, typ uint8, off uint64) Key {
	return Key{ObjectID: uint64(ino), Type: typ, Offset: off}
}

// Ino is the key's objectid read as an inode number: for the items of the
// fs tree and of log trees, all but EXTENT_CSUM.
func (k Key) Ino() Ino { return Ino(k.ObjectID) }
