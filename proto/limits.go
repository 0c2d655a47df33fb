package proto

import (
	"fmt"
	"syscall"
)

// Every bound of the protocol, with the reason for its value. A decoder
// checks each one before it allocates or slices by a length read from the
// wire (doc.go, invariant 1); an encoder checks them with Validate, so what
// it writes its peer accepts.
const (
	// IOSizeMax bounds the data of one write, read, put or get (1 MiB).
	// It is the store's own write chunk (store.writeChunk): one request
	// is one buffered chunk, one budget reservation. Bigger requests buy
	// nothing — pipelining 1 MiB requests already keeps the device busy —
	// and would let one request hold a connection's reader (head-of-line
	// blocking) and the server's memory for longer.
	IOSizeMax = 1 << 20

	// frameOverhead is what a data-carrying frame holds besides its data:
	// the largest is a put (header 16, traceparent 55, path 2+4096, fsync
	// 1 = 4170 bytes). 8 KiB leaves room and keeps FrameSizeMax round.
	frameOverhead = 8 << 10

	// FrameSizeMax is the protocol's largest frame, its size field
	// included: a full IOSizeMax of data plus its frame. A server may
	// announce less in its HelloReply, never more; the announced value
	// bounds frames in both directions.
	FrameSizeMax = IOSizeMax + frameOverhead

	// FrameSizeMin is the smallest FrameSizeMax a server may announce: it
	// must hold every payload that is not file data at its largest (a
	// readdir reply of ReadDirEntriesMax entries with 255-byte names is
	// 279,574 bytes framed), so that only data requests depend on the
	// negotiated size.
	FrameSizeMin = 512 << 10

	// InflightMax bounds the requests a client may have in flight on one
	// connection (a server may announce fewer). The benchmarks drive queue
	// depths up to 128 on one connection; twice that leaves headroom. It
	// also bounds a connection's memory in the server: at most
	// InflightMax frames of FrameSizeMax each.
	InflightMax = 256

	// NameLenMax is the longest directory entry name (bytes): NAME_MAX,
	// and the store's own limit (engine.NameMax). Names are sent with a
	// one-byte length, so a longer one cannot even be encoded.
	NameLenMax = 255

	// PathLenMax is the longest path (bytes): Linux's PATH_MAX, so every
	// path a local tool can name fits. Paths are sent with a two-byte
	// length and checked against this before use.
	PathLenMax = 4096

	// SymlinkTargetMax is the longest symbolic link target (bytes):
	// PATH_MAX − 1, as symlink(2) takes one (the kernel's PATH_MAX counts
	// the NUL). The store may hold less (docs/FORMAT.md: 4,037 bytes at
	// 16 KiB nodes) and answers ENAMETOOLONG past its own limit.
	SymlinkTargetMax = PathLenMax - 1

	// ReadDirEntriesMax bounds one readdir reply. A listing resumes by
	// cookie, so a bigger batch only saves round trips: 1024 entries make
	// a million-entry directory a thousand round trips, and the largest
	// such reply (279,574 bytes) still fits FrameSizeMin.
	ReadDirEntriesMax = 1024

	// MessageLenMax bounds an error response's message (bytes). A message
	// is for people and logs, never parsed: an errno's text with the op
	// and the inode or name it concerns fits with room to spare. Longer
	// messages are cut by AppendResponse.
	MessageLenMax = 1024
)

// Sizes of the fixed parts of the encoding, used by the bounds above.
const (
	attrSize     = 96                       // Attr
	dirEntryMin  = 8 + 8 + 1 + 1            // DirEntry with an empty name
	dirEntryMax  = dirEntryMin + NameLenMax // DirEntry with a 255-byte name
	readDirMax   = responseHeaderSize + 4 + ReadDirEntriesMax*dirEntryMax
	putOverhead  = requestHeaderSize + TraceparentLen + 2 + PathLenMax + 1
	getOverhead  = responseHeaderSize + attrSize
	writeHeadLen = 8 + 8 + 4 // Write's ino, offset, flags
)

// The relations between the limits, checked at compile time: a negative
// constant converted to uint does not compile.
const (
	_ uint = frameOverhead - putOverhead                                         // a put fits
	_ uint = frameOverhead - getOverhead                                         // a get reply fits
	_ uint = frameOverhead - (requestHeaderSize + TraceparentLen + writeHeadLen) // a write fits
	_ uint = FrameSizeMin - readDirMax                                           // a readdir reply fits the smallest frame
	_ uint = FrameSizeMin - frameOverhead - 4096                                 // the smallest frame carries data
	_ uint = FrameSizeMax - FrameSizeMin
	_ uint = 1<<32 - 1 - FrameSizeMax // the size field is a u32
	_ uint = 1<<16 - 1 - PathLenMax   // a path length is a u16
	_ uint = 1<<16 - 1 - MessageLenMax
	_ uint = 1<<8 - 1 - NameLenMax // a name length is a u8
)

// Limits are what a server announces in its HelloReply: the frame size and
// the in-flight requests it accepts on this connection, at most the
// protocol's FrameSizeMax and InflightMax.
type Limits struct {
	FrameSizeMax uint32 // bytes, a frame's size field included; both directions
	InflightMax  uint32 // requests a client may have in flight at once
}

// MaxLimits returns the protocol's own limits, the most a server may
// announce.
func MaxLimits() Limits {
	return Limits{FrameSizeMax: FrameSizeMax, InflightMax: InflightMax}
}

// Validate checks that l is within the protocol's bounds.
func (l Limits) Validate() error {
	if l.FrameSizeMax < FrameSizeMin || l.FrameSizeMax > FrameSizeMax {
		return fmt.Errorf("proto: frame size limit %d outside [%d, %d]: %w", l.FrameSizeMax, FrameSizeMin, FrameSizeMax, syscall.EINVAL)
	}
	if l.InflightMax < 1 || l.InflightMax > InflightMax {
		return fmt.Errorf("proto: in-flight limit %d outside [1, %d]: %w", l.InflightMax, InflightMax, syscall.EINVAL)
	}
	return nil
}

// IOSizeMax is the most data one write, read, put or get may carry under
// l: IOSizeMax, or less when the frame size is smaller, rounded down to
// 4 KiB so that chunks of a streamed file stay block-aligned in the store.
func (l Limits) IOSizeMax() uint32 {
	if l.FrameSizeMax < FrameSizeMin {
		return 0
	}
	return min(IOSizeMax, (l.FrameSizeMax-frameOverhead)&^4095)
}
