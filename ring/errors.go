package ring

import "errors"

var (
	// ErrUnavailable: io_uring cannot be used on this machine (disabled by
	// sysctl, blocked by seccomp, missing from the kernel, or missing an
	// opcode we need). The error wraps the errno and says what to do; callers
	// fall back to plain syscalls.
	ErrUnavailable = errors.New("ring: io_uring unavailable")
	// ErrClosed: the ring was closed before the operation was submitted.
	ErrClosed = errors.New("ring: closed")
	// ErrCanceled: an earlier operation of the same linked chain failed or was
	// short, so the kernel canceled this one (ECANCELED).
	ErrCanceled = errors.New("ring: canceled because an earlier linked operation failed")
	// ErrBatchTooLarge: a batch (or a linked chain) holds more operations than
	// the ring can have in flight at once.
	ErrBatchTooLarge = errors.New("ring: batch larger than the ring's in-flight limit")
	// ErrInvalidOp: an Op failed validation before submission (no buffer for a
	// read, negative offset, unknown kind).
	ErrInvalidOp = errors.New("ring: invalid operation")
)
