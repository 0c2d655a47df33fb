package server

import "errors"

// Operating errors of the server. Each is wrapped with the path or peer it
// concerns; check them with errors.Is.
var (
	// ErrSocketInUse: a server already listens on the socket path.
	ErrSocketInUse = errors.New("server: a server is already listening on the socket")

	// ErrNotSocket: the socket path names a file that is not a socket. It
	// is never removed: it may be someone's data.
	ErrNotSocket = errors.New("server: the socket path exists and is not a socket")

	// ErrPeerRefused: a peer's credentials are not on the allow-list.
	ErrPeerRefused = errors.New("server: peer not allowed")

	// ErrClosed: Serve after Shutdown.
	ErrClosed = errors.New("server: closed")
)
