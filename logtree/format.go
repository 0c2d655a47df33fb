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
	// TypeLogFile (ino, 110, seq): the inode's file log, in the order it
	// was logged — a range record (the file range [start, end) whose
	// extents the extent records after it replace) or an extent record (a
	// copy of an EXTENT_DATA item and its file offset). Replay applies them
	// in sequence order, later over earlier. Each fsync appends: its items
	// land in the last leaf of the inode's run, not all over it.
	TypeLogFile uint8 = 110
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
	// LogXattrs: the inode's XATTR_ITEMs are logged, all of them: after
	// replay its extended attributes are exactly those.
	LogXattrs
)

var le = binary.LittleEndian

// LogInodeKey is the key of an inode's LOG_INODE item.
func LogInodeKey(ino engine.Ino) engine.Key {
	return engine.InoKey(ino, TypeLogInode, 0)
}

// FileLogKey is the key of record seq of ino's file log.
func FileLogKey(ino engine.Ino, seq uint64) engine.Key {
	return engine.InoKey(ino, TypeLogFile, seq)
}

// File log record kinds (the first payload byte).
const (
	fileLogRange  = 1 // start u64, end u64
	fileLogExtent = 2 // file offset u64, then a FileExtent encoding
)

// EncodeFileRange encodes a range record.
func EncodeFileRange(start, end uint64) []byte {
	b := []byte{fileLogRange}
	b = le.AppendUint64(b, start)
	return le.AppendUint64(b, end)
}

// fileLogExtentHeader is an extent record's bytes before its FileExtent
// encoding: the kind and the file offset.
const fileLogExtentHeader = 1 + 8

// InlineExtentRecordSize is the size of an extent record that copies an
// inline extent of n bytes: the record is one log item, so the largest
// inline extent the log can copy is bounded by it (a symlink's target,
// store/symlink.go).
func InlineExtentRecordSize(n int) int { return fileLogExtentHeader + engine.FileExtentInlineSize(n) }

// EncodeFileExtent encodes an extent record.
func EncodeFileExtent(off uint64, x *engine.FileExtent) []byte {
	b := []byte{fileLogExtent}
	b = le.AppendUint64(b, off)
	return x.Encode(b)
}

// fileLogRecord is a decoded record: a range (isRange) or an extent.
type fileLogRecord struct {
	isRange    bool
	start, end uint64
	ext        Extent
}

func decodeFileLog(b []byte) (fileLogRecord, error) {
	switch {
	case len(b) == 17 && b[0] == fileLogRange:
		return fileLogRecord{isRange: true, start: le.Uint64(b[1:]), end: le.Uint64(b[9:])}, nil
	case len(b) > 9 && b[0] == fileLogExtent:
		x, err := engine.DecodeFileExtent(b[9:])
		if err != nil {
			return fileLogRecord{}, err
		}
		x.Data = append([]byte(nil), x.Data...)
		return fileLogRecord{ext: Extent{Off: le.Uint64(b[1:]), Item: x}}, nil
	}
	return fileLogRecord{}, fmt.Errorf("%w: file log record of %d bytes", engine.ErrCorruption, len(b))
}

// DirRangeKey is the key of a DIR_LOG_INDEX item.
func DirRangeKey(dir engine.Ino, lo uint64) engine.Key {
	return engine.InoKey(dir, TypeDirLogIndex, lo)
}

// EncodeEnd encodes the end of a DIR_LOG_INDEX item.
func EncodeEnd(end uint64) []byte { return le.AppendUint64(nil, end) }

// DecodeEnd decodes the end of a DIR_LOG_INDEX item.
func DecodeEnd(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("%w: range item of %d bytes", engine.ErrCorruption, len(b))
	}
	return le.Uint64(b), nil
}
