package memdev

import (
	"errors"
	"fmt"
	"syscall"

	"ustore/dev"
)

// ErrInjected marks every error that InjectError or FailFrom made, so a test
// can tell its own faults from real failures with errors.Is.
var ErrInjected = errors.New("memdev: injected fault")

// injectedError carries an injected error and the ErrInjected mark.
type injectedError struct{ err error }

func (e *injectedError) Error() string   { return e.err.Error() + " (injected)" }
func (e *injectedError) Unwrap() []error { return []error{e.err, ErrInjected} }

// injected turns the error a fault was armed with into what the operation
// returns: an errno becomes dev.MediumError, as a real medium's would, so
// that it matches dev.ErrIO or dev.ErrNoSpace; anything else is wrapped with
// the operation and offset.
func injected(kind OpKind, off int64, err error) error {
	if errno, ok := err.(syscall.Errno); ok {
		return &injectedError{err: dev.MediumError(kind.String(), off, errno)}
	}
	return &injectedError{err: fmt.Errorf("memdev: %s at offset %d: %w", kind, off, err)}
}
