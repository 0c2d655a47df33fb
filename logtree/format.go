package logtree

import (
	"encoding/binary"
	"fmt"

	"ustore/engine"
)

// Log-only item types. Keys (ino, type, offset) sort them among the
// inode's copied items.
const (
	// TypeLogInode (ino, 2, 0) → one byte of LogFlags: how the inode was
	// logged.
	TypeLogInode uint8 = 2
	// TypeLogFileRange (ino, 110, start) → end (u64): the file range
	// [start, end) whose extents the logged EXTENT_DATA items replace.
	TypeLogFileRange uint8 = 110
	// DIR_LOG_INDEX (dir, 72, lo) → hi (u64): the directory index range
	// [lo, hi) whose entries the logged DIR_INDEX items replace.
	TypeDirLogIndex = engine.TypeDirLogIndex
)

// LogFlags say what of an inode a log holds.
type LogFlags uint8

const (
	// LogNames: the inode's INODE_REF items are logged, all of them: after
	// replay its names are exactly those.
	LogNames LogFlags = 1 << iota
	// LogExists: only the inode item, so that a logged directory entry
	// can point at it (btrfs: LOG_INODE_EXISTS).
	LogExists
)

var le = binary.LittleEndian

// LogInodeKey is the key of an inode's LOG_INODE item.
func LogInodeKey(ino uint64) engine.Key {
	return engine.Key{ObjectID: ino, Type: TypeLogInode}
}

// FileRangeKey is the key of a LOG_FILE_RANGE item.
func FileRangeKey(ino, start uint64) engine.Key {
	return engine.Key{ObjectID: ino, Type: TypeLogFileRange, Offset: start}
}

// DirRangeKey is the key of a DIR_LOG_INDEX item.
func DirRangeKey(dir, lo uint64) engine.Key {
	return engine.Key{ObjectID: dir, Type: TypeDirLogIndex, Offset: lo}
}

// EncodeEnd encodes the end of a range item.
func EncodeEnd(end uint64) []byte { return le.AppendUint64(nil, end) }

// DecodeEnd decodes the end of a range item.
func DecodeEnd(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("%w: range item of %d bytes", engine.ErrCorruption, len(b))
	}
	return le.Uint64(b), nil
}
