package journal

import (
	"errors"
	"fmt"
)

var (
	// ErrClosed: Close has been called; no new handle may start.
	ErrClosed = errors.New("journal: closed")
	// ErrNoTransaction: Join found no running transaction to attach to.
	ErrNoTransaction = errors.New("journal: no running transaction")
	// ErrFailed: a commit failed and the store is read-only. Errors that
	// carry it are *FailedError values, which also wrap the commit's cause.
	ErrFailed = errors.New("journal: failed")
	// ErrTransidsExhausted: the next transaction id would wrap to 0 ("none").
	ErrTransidsExhausted = errors.New("journal: transaction ids exhausted")
	// ErrWouldWait: TryStart declined, since Start would have waited for
	// the committing transaction to freeze.
	ErrWouldWait = errors.New("journal: a start would wait for the committing transaction")
	// ErrOptions: Open was given an option out of its bounds.
	ErrOptions = errors.New("journal: invalid options")
)

// FailedError is the journal's sticky failure: the commit of Transid
// returned Cause. It matches both ErrFailed and Cause with errors.Is, so the
// engine can still tell an EIO from an ENOSPC.
type FailedError struct {
	Transid Transid
	Cause   error
}

func (e *FailedError) Error() string {
	return fmt.Sprintf("journal: commit of transaction %d failed, store is read-only: %v", e.Transid, e.Cause)
}

func (e *FailedError) Unwrap() []error { return []error{ErrFailed, e.Cause} }
