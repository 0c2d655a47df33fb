package server

import (
	"time"

	"ustore/proto"
)

// Every bound of the server, with its reason. The protocol's own bounds
// (frame size, in-flight requests, names, paths) are in proto/limits.go;
// these are the server's choices within them.
const (
	// connMaxDefault bounds the connections served at once (Options.ConnMax).
	// Each holds at most its in-flight max requests, so this bounds the
	// worker goroutines and frame buffers of the whole server. A client
	// pipelines on one connection; a thousand is far more than a machine's
	// local clients.
	connMaxDefault = 1024

	// connReservedDefault of the connections are kept for the admins
	// (Options.ConnReserved): enough for a few tools at once.
	connReservedDefault = 8

	// connPerUIDMaxDefault bounds one user's connections
	// (Options.ConnPerUIDMax): a client pipelines on one connection, so
	// tens are plenty, and sixteen users at the limit still leave room.
	connPerUIDMaxDefault = 64

	// inflightBytesMaxDefault is the budget of bytes in flight
	// (Options.InflightBytesMax), the size of the cache's and the dirty
	// data's default budgets: 256 full frames, or tens of thousands of
	// small requests, across all connections.
	inflightBytesMaxDefault = 256 << 20

	// handlesPerConnMaxDefault bounds one connection's open files
	// (Options.HandlesPerConnMax): each is a map entry and an inode held
	// in memory; a FUSE mount holds one per file its programs have open,
	// and Linux's default RLIMIT_NOFILE soft limit is 1024.
	handlesPerConnMaxDefault = 4096

	// idleTimeoutDefault closes an idle connection (Options.IdleTimeout):
	// long enough for a client between bursts, short enough that idle
	// connections do not pile up.
	idleTimeoutDefault = 5 * time.Minute

	// frameTimeoutDefault bounds the reading of a started frame
	// (Options.FrameTimeout); a full frame over a local socket takes
	// under a millisecond.
	frameTimeoutDefault = 10 * time.Second

	// writeTimeoutDefault bounds each write of responses
	// (Options.WriteTimeout): a third of serve's --shutdown-timeout, so a
	// client that never reads cannot hold a graceful shutdown to it.
	writeTimeoutDefault = 10 * time.Second

	// logIntervalDefault: at most one line per interval of each kind a
	// peer can cause at will (Options.LogInterval).
	logIntervalDefault = 10 * time.Second

	// helloTimeout bounds the wait for a client's hello: a peer that
	// connects and says nothing must not hold a connection slot.
	helloTimeout = 10 * time.Second

	// refuseTimeout bounds the wait for the hello of a refused peer, which
	// is read only so that the refusal reaches it (a socket closed with
	// unread data resets).
	refuseTimeout = time.Second

	// staleDialTimeout bounds the probe of an existing socket file: a
	// server that does not accept within it is taken as alive (the
	// socket is not removed).
	staleDialTimeout = time.Second

	// acceptBackoffMax caps the pause after a failed accept (EMFILE and
	// friends), so the loop neither spins nor stalls.
	acceptBackoffMax = time.Second

	// inlineReadMax bounds a read the reader serves itself from the
	// store's memory (conn_inline.go): its copy, about 10 µs at 128 KiB,
	// costs about what the hand-off to a worker it saves does, and
	// holds the connection's later requests no longer; a larger read
	// goes to a worker, where reads of one connection copy in parallel.
	inlineReadMax = 128 << 10

	// readBufferSize and writeBufferSize size a connection's bufio
	// reader and writer: many small frames per system call; a large
	// frame bypasses them.
	readBufferSize  = 64 << 10
	writeBufferSize = 64 << 10

	// socketPathMax is the longest socket path (sun_path holds 108 bytes
	// with its NUL).
	socketPathMax = 107
)

// responseHeaderSize is the size of a response frame's header with no
// message (docs/PROTOCOL.md: the payload starts at 18+m). A read or get
// reply is read from the store straight into the frame buffer at this
// offset, so that encoding it copies the data onto itself.
const responseHeaderSize = 18

// attrSize is the size of an encoded Attr (docs/PROTOCOL.md).
const attrSize = 96

// inflightBytesMin is the least budget of bytes in flight: two full frame
// buffers. One acquisition is at most a full frame buffer and a small one
// (a write's frame and its reply), so every one can be met.
var inflightBytesMin = int64(2 * proto.BufferLargeCap())

// readDirReplyMax is the encoded size of a readdir reply of n entries at
// most, names at their longest (docs/PROTOCOL.md: count u32, then entries
// of ino, cookie, type, name length and name).
func readDirReplyMax(n uint32) int {
	return responseHeaderSize + 4 + int(n)*(8+8+1+1+proto.NameLenMax)
}
