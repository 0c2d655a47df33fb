package engine

import (
	"fmt"

	"ustore/journal"
)

// The payloads of the fs tree's and the csum tree's items: what a file and a
// directory are on disk. store/ gives them meaning; they live here because
// fsck accounts for the data space that file extents reference, and because
// the log tree (logtree/) copies them. docs/FORMAT.md draws each layout.

// CsumObjectID is the objectid of every EXTENT_CSUM item (btrfs:
// BTRFS_EXTENT_CSUM_OBJECTID, -10).
const CsumObjectID = ^uint64(9)

// OrphanObjectID is the objectid of every ORPHAN_ITEM (btrfs:
// BTRFS_ORPHAN_OBJECTID, -5): (OrphanObjectID, ORPHAN_ITEM, ino) names an
// inode whose last name is gone while it is still open.
const OrphanObjectID = ^uint64(4)

// Timespec is a time as seconds and nanoseconds since the epoch.
type Timespec struct {
	Sec  int64
	Nsec uint32
}

// InodeItem is an inode (key: ino, INODE_ITEM, 0).
type InodeItem struct {
	Generation journal.Transid // transaction that created the inode
	Transid    journal.Transid // transaction of the last change to this item
	Size       uint64          // bytes; for a directory, the number of entries
	Nbytes     uint64          // data bytes allocated (blocks and inline)
	Mode       uint32          // file type and permission bits, as st_mode
	Nlink      uint32
	UID, GID   uint32
	Flags      uint64
	Atime      Timespec
	Mtime      Timespec
	Ctime      Timespec
	Otime      Timespec // creation
}

// InodeItemSize is the encoded size of an InodeItem.
const InodeItemSize = 8*4 + 4*4 + 8 + 12*4

// Encode appends the item's encoding to b.
func (in *InodeItem) Encode(b []byte) []byte {
	b = le.AppendUint64(b, uint64(in.Generation))
	b = le.AppendUint64(b, uint64(in.Transid))
	b = le.AppendUint64(b, in.Size)
	b = le.AppendUint64(b, in.Nbytes)
	b = le.AppendUint32(b, in.Mode)
	b = le.AppendUint32(b, in.Nlink)
	b = le.AppendUint32(b, in.UID)
	b = le.AppendUint32(b, in.GID)
	b = le.AppendUint64(b, in.Flags)
	for _, t := range [...]Timespec{in.Atime, in.Mtime, in.Ctime, in.Otime} {
		b = le.AppendUint64(b, uint64(t.Sec))
		b = le.AppendUint32(b, t.Nsec)
	}
	return b
}

// DecodeInodeItem decodes an INODE_ITEM payload.
func DecodeInodeItem(b []byte) (InodeItem, error) {
	var in InodeItem
	if len(b) != InodeItemSize {
		return in, fmt.Errorf("%w: inode item of %d bytes, want %d", ErrCorruption, len(b), InodeItemSize)
	}
	in.Generation = journal.Transid(le.Uint64(b[0:]))
	in.Transid = journal.Transid(le.Uint64(b[8:]))
	in.Size = le.Uint64(b[16:])
	in.Nbytes = le.Uint64(b[24:])
	in.Mode = le.Uint32(b[32:])
	in.Nlink = le.Uint32(b[36:])
	in.UID = le.Uint32(b[40:])
	in.GID = le.Uint32(b[44:])
	in.Flags = le.Uint64(b[48:])
	ts := []*Timespec{&in.Atime, &in.Mtime, &in.Ctime, &in.Otime}
	for i, t := range ts {
		o := 56 + 12*i
		t.Sec = int64(le.Uint64(b[o:]))
		t.Nsec = le.Uint32(b[o+8:])
	}
	return in, nil
}

// DirEntry is one name in a directory. DIR_ITEM (dir, DIR_ITEM, hash(name))
// holds a list of them — every name with that hash — and DIR_INDEX (dir,
// DIR_INDEX, index) exactly one. INODE_REF (child, INODE_REF, dir) holds a
// list of the child's names in dir, with Child set to dir.
type DirEntry struct {
	Child Ino    // the inode the name points at (INODE_REF: the directory)
	Type  uint8  // DT_* of the child (INODE_REF: 0)
	Index uint64 // the entry's DIR_INDEX offset
	Name  []byte
}

const dirEntryHeader = 8 + 1 + 8 + 2

// NameMax is the longest name.
const NameMax = 255

// EncodeDirEntries appends the encoding of es to b.
func EncodeDirEntries(b []byte, es ...DirEntry) []byte {
	for _, e := range es {
		b = le.AppendUint64(b, uint64(e.Child))
		b = append(b, e.Type)
		b = le.AppendUint64(b, e.Index)
		b = le.AppendUint16(b, uint16(len(e.Name)))
		b = append(b, e.Name...)
	}
	return b
}

// DecodeDirEntries decodes a DIR_ITEM, DIR_INDEX or INODE_REF payload; the
// names alias b.
func DecodeDirEntries(b []byte) ([]DirEntry, error) {
	var es []DirEntry
	for len(b) > 0 {
		if len(b) < dirEntryHeader {
			return nil, fmt.Errorf("%w: directory entry header cut short (%d bytes)", ErrCorruption, len(b))
		}
		e := DirEntry{Child: Ino(le.Uint64(b)), Type: b[8], Index: le.Uint64(b[9:])}
		n := int(le.Uint16(b[17:]))
		if n == 0 || n > NameMax || len(b) < dirEntryHeader+n {
			return nil, fmt.Errorf("%w: directory entry name of %d bytes in %d", ErrCorruption, n, len(b))
		}
		e.Name = b[dirEntryHeader : dirEntryHeader+n]
		es = append(es, e)
		b = b[dirEntryHeader+n:]
	}
	return es, nil
}

// DirEntrySize is the encoded size of one entry with a name of n bytes.
func DirEntrySize(n int) int { return dirEntryHeader + n }

// One entry of the longest name fits in an item at the smallest node
// size: a new name's own INODE_REF and a fresh DIR_ITEM always fit, and
// only lists that several names share (store/name_room.go) can fill up.
// A compile-time check: the array length is negative otherwise.
var _ [(NodeSizeMin-headerSize)/4 - itemHeaderSize - (dirEntryHeader + NameMax)]struct{}

// File extent types.
const (
	ExtentInline  = 0 // the data follows the header inside the item
	ExtentRegular = 1 // the data is at DiskBytenr on the device
)

// FileExtent is an EXTENT_DATA item (ino, EXTENT_DATA, file offset). A
// regular extent maps [offset, offset+NumBytes) of the file to
// [DiskBytenr, DiskBytenr+NumBytes) of the device, NumBytes a multiple of
// SectorSize; no block is shared by two extents (version 1), so space is
// freed per block. An inline extent holds Data, the file's bytes from
// offset 0, and only a file's first block may be inline.
type FileExtent struct {
	Generation journal.Transid // transaction that wrote the data
	Type       uint8
	DiskBytenr Bytenr
	NumBytes   uint64
	Data       []byte // inline only; aliases the decoded payload
}

// DiskEnd is the end of a regular extent's device range (exclusive).
func (x FileExtent) DiskEnd() Bytenr { return x.DiskBytenr + Bytenr(x.NumBytes) }

const fileExtentHeader = 8 + 1
const fileExtentRegularSize = fileExtentHeader + 16

// Encode appends the extent's encoding to b.
func (x *FileExtent) Encode(b []byte) []byte {
	b = le.AppendUint64(b, uint64(x.Generation))
	b = append(b, x.Type)
	if x.Type == ExtentInline {
		return append(b, x.Data...)
	}
	b = le.AppendUint64(b, uint64(x.DiskBytenr))
	return le.AppendUint64(b, x.NumBytes)
}

// DecodeFileExtent decodes an EXTENT_DATA payload.
func DecodeFileExtent(b []byte) (FileExtent, error) {
	var x FileExtent
	if len(b) < fileExtentHeader {
		return x, fmt.Errorf("%w: file extent item of %d bytes", ErrCorruption, len(b))
	}
	x.Generation = journal.Transid(le.Uint64(b))
	x.Type = b[8]
	switch x.Type {
	case ExtentInline:
		x.Data = b[fileExtentHeader:]
		x.NumBytes = uint64(len(x.Data))
		if x.NumBytes == 0 || x.NumBytes > SectorSize {
			return x, fmt.Errorf("%w: inline extent of %d bytes", ErrCorruption, x.NumBytes)
		}
	case ExtentRegular:
		if len(b) != fileExtentRegularSize {
			return x, fmt.Errorf("%w: regular file extent item of %d bytes", ErrCorruption, len(b))
		}
		x.DiskBytenr = Bytenr(le.Uint64(b[9:]))
		x.NumBytes = le.Uint64(b[17:])
		if x.NumBytes == 0 || x.NumBytes%SectorSize != 0 || x.DiskBytenr%SectorSize != 0 || x.DiskBytenr < firstAllocatable {
			return x, fmt.Errorf("%w: file extent [%d, +%d)", ErrCorruption, x.DiskBytenr, x.NumBytes)
		}
	default:
		return x, fmt.Errorf("%w: file extent type %d", ErrCorruption, x.Type)
	}
	return x, nil
}

// CsumSize is the size of one data block's checksum in an EXTENT_CSUM item
// (CsumObjectID, EXTENT_CSUM, disk bytenr): a crc32c per SectorSize block
// from that bytenr on.
const CsumSize = 4

// DataCsum is the checksum of one data block.
func DataCsum(block []byte) uint32 { return crc32c(block) }

// PutCsum and GetCsum encode one checksum at index i of a csum payload.
func PutCsum(b []byte, i int, c uint32) { le.PutUint32(b[i*CsumSize:], c) }

// GetCsum returns checksum i of a csum payload.
func GetCsum(b []byte, i int) uint32 { return le.Uint32(b[i*CsumSize:]) }

// FileExtentInlineSize is the payload size of an inline extent of n bytes.
func FileExtentInlineSize(n int) int { return fileExtentHeader + n }

// FileExtentMaxInline is the most data an inline extent holds in a tree of
// the given item size limit: up to 2 KiB, so that a small file's tail lives
// in its leaf (docs/FORMAT.md, EXTENT_DATA).
func FileExtentMaxInline(itemDataMax int) int { return min(2048, itemDataMax-fileExtentHeader) }
