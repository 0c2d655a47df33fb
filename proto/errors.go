package proto

import (
	"errors"
	"fmt"
	"io"
	"syscall"
)

// Decoding errors. Each is checked with errors.Is; the error returned wraps
// one of them with a description of what was wrong and where.
var (
	// ErrMalformed marks bytes that are not a valid frame, handshake or
	// payload: truncated, an absurd length, an unknown kind or flag, a
	// string overrunning its payload, trailing bytes, a non-canonical
	// field. The server answers StatusBadMessage and closes the
	// connection: after a malformed frame it cannot trust the peer.
	ErrMalformed = errors.New("proto: malformed")

	// ErrUnknownOp marks a well-framed request whose op code this version
	// does not know. It is not ErrMalformed: the frame's size delimited it,
	// the stream is still in step, so the server answers StatusNoSys for
	// that request id and keeps the connection.
	ErrUnknownOp = errors.New("proto: unknown op")

	// ErrOverLimit marks a well-framed, well-formed request whose data or
	// read length is over IOSizeMax. It is not ErrMalformed: the frame's
	// size kept the stream in step and the value is only too large, so
	// the server answers StatusInvalid (EINVAL) for that request id and
	// keeps the connection, as it does for a length over the connection's
	// negotiated Limits.IOSizeMax.
	ErrOverLimit = errors.New("proto: request over a limit")

	// ErrVersion marks a handshake with no protocol version both sides
	// speak. The server answers StatusVersion and closes.
	ErrVersion = errors.New("proto: no common protocol version")
)

// malformed returns an ErrMalformed with a description.
func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// truncated returns an ErrMalformed for input that ended early: got bytes
// of want. It wraps io.ErrUnexpectedEOF too.
func truncated(got, want int) error {
	return fmt.Errorf("%w: truncated: %d of %d bytes: %w", ErrMalformed, got, want, io.ErrUnexpectedEOF)
}

// StatusError is a failed response as the client sees it: the status and
// the server's message. It unwraps to the status's errno, so that
// errors.Is(err, fs.ErrNotExist) and errors.Is(err, syscall.ENOENT) hold for
// a remote ENOENT.
type StatusError struct {
	Status  Status
	Message string
}

// Err returns a *StatusError for a response's status and message, or nil
// for StatusOK.
func Err(s Status, message string) error {
	if s == StatusOK {
		return nil
	}
	return &StatusError{Status: s, Message: message}
}

func (e *StatusError) Error() string {
	if e.Message == "" {
		return e.Status.String() + ": " + e.Status.Errno().Error()
	}
	return e.Status.String() + ": " + e.Message
}

// Unwrap returns the status's errno.
func (e *StatusError) Unwrap() error { return e.Status.Errno() }

// invalid returns an error for a value the protocol cannot carry, wrapping
// errno (EINVAL, ENAMETOOLONG, EMSGSIZE, or for xattrs ERANGE and E2BIG),
// for Validate.
func invalid(errno syscall.Errno, format string, args ...any) error {
	return fmt.Errorf("proto: %s: %w", fmt.Sprintf(format, args...), errno)
}
