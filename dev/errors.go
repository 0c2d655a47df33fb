package dev

import (
	"errors"
	"fmt"
	"syscall"
)

var (
	// ErrAlignment: an offset, a length or a buffer address is not a multiple
	// of SectorSize. A programming error of the caller; nothing was issued.
	ErrAlignment = errors.New("dev: unaligned I/O")
	// ErrOutOfRange: an I/O reaches past the end of the device.
	ErrOutOfRange = errors.New("dev: I/O outside the device")
	// ErrIO: the medium reported an I/O error (EIO).
	ErrIO = errors.New("dev: I/O error")
	// ErrNoSpace: the medium is full (ENOSPC), e.g. a sparse file on a full
	// filesystem.
	ErrNoSpace = errors.New("dev: no space left on the backing store")
	// ErrClosed: the device was used after Close.
	ErrClosed = errors.New("dev: device closed")
)

// MediumError wraps an errno from the medium so that it matches both the
// errno and this package's sentinel (ErrIO, ErrNoSpace) with errors.Is.
func MediumError(op string, off int64, errno syscall.Errno) error {
	return &mediumError{op: op, off: off, errno: errno}
}

type mediumError struct {
	op    string
	off   int64
	errno syscall.Errno
}

func (e *mediumError) Error() string {
	return fmt.Sprintf("dev: %s at offset %d: %v", e.op, e.off, e.errno)
}

func (e *mediumError) Unwrap() []error {
	switch e.errno {
	case syscall.EIO:
		return []error{e.errno, ErrIO}
	case syscall.ENOSPC, syscall.EDQUOT:
		return []error{e.errno, ErrNoSpace}
	}
	return []error{e.errno}
}
