package client

import "errors"

// Errors of the client itself. A failed request is a *proto.StatusError
// (check it with errors.Is against its errno or fs.Err*).
var (
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("client: closed")

	// ErrConnection wraps the reason a connection ended (a read or write
	// error, a malformed response, a connection-level status from the
	// server such as ESHUTDOWN); every call in flight, and every later
	// call, fails with it.
	ErrConnection = errors.New("client: connection ended")
)
