package store

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"ustore/engine"
)

// Errors are POSIX errnos (syscall.Errno), wrapped in *fs.PathError with the
// operation and the name or inode they concern, so that
// errors.Is(err, fs.ErrNotExist) and errors.Is(err, syscall.ENOENT) both
// work, and the server can send the errno over the wire.

// ErrLogReplayNeeded: a read-only Open found an fsync log to replay
// (read_only.go).
var ErrLogReplayNeeded = errors.New("store: the fsync log must be replayed, and a read-only mount cannot")

// ErrnoOf returns the errno an error stands for: the Errno it wraps, EIO for
// corruption and device errors, ENOSPC for a full device, EROFS once the
// engine is read-only, and EIO for anything else.
func ErrnoOf(err error) syscall.Errno {
	var en syscall.Errno
	switch {
	case err == nil:
		return 0
	case errors.As(err, &en):
		return en
	case errors.Is(err, engine.ErrCorruption):
		return syscall.EIO
	case errors.Is(err, engine.ErrNoSpace):
		return syscall.ENOSPC
	case errors.Is(err, engine.ErrReadOnly), errors.Is(err, engine.ErrMountedReadOnly):
		return syscall.EROFS
	default:
		return syscall.EIO
	}
}

// opErr wraps err (an Errno or an engine error) for operation op on what.
func opErr(op string, what any, err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return err
	}
	if _, ok := err.(syscall.Errno); !ok {
		// Keep the cause for the log and errors.Is, and the errno for the
		// wire.
		err = &causeErr{errno: ErrnoOf(err), cause: err}
	}
	return &fs.PathError{Op: op, Path: fmt.Sprint(what), Err: err}
}

// causeErr is an errno with the engine or device error behind it.
type causeErr struct {
	errno syscall.Errno
	cause error
}

func (e *causeErr) Error() string { return e.errno.Error() + ": " + e.cause.Error() }

// Unwrap gives errors.Is both the errno (and through it fs.ErrNotExist and
// friends) and the cause.
func (e *causeErr) Unwrap() []error { return []error{e.errno, e.cause} }

// abortOnError aborts the running transaction if *err is set: for the
// deferred call of an operation that has started changing trees, whose
// half-done change must never be committed.
func (s *Store) abortOnError(err *error) {
	if *err != nil {
		*err = s.e.Abort(*err)
	}
}
