package server

import "time"

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
