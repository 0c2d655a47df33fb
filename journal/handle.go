package journal

import (
	"sync/atomic"

	"ustore/internal/assert"
)

// Handle is one caller's membership in a transaction (btrfs:
// btrfs_trans_handle): while it is open, its transaction cannot be written
// out, so the caller's changes to the CoW trees land in it whole. End it
// exactly once, as soon as the changes are made.
type Handle struct {
	j     *Journal
	t     *transaction
	ended atomic.Bool
}

// Start returns a handle on the running transaction, creating one if none
// runs. It never waits for a commit: while T commits, Start creates or joins
// T+1. It fails with ErrClosed after Close, and with an error wrapping
// ErrFailed once a commit has failed.
func (j *Journal) Start() (*Handle, error) {
	return j.attach(true, true)
}

// TryStart is Start for a caller that must not wait (a request served on
// a connection's reader): where Start would wait for the committing
// transaction's last handle to end, it returns ErrWouldWait having
// changed nothing.
func (j *Journal) TryStart() (*Handle, error) {
	return j.attach(true, false)
}

// Join is Start for work that belongs only to a transaction that already
// runs (btrfs: join/attach rather than start): it returns ErrNoTransaction
// instead of creating one.
func (j *Journal) Join() (*Handle, error) {
	return j.attach(false, true)
}

// attach opens a handle on the running transaction; create says whether it
// may create one, wait whether it may wait for the committing one to
// freeze (ErrWouldWait if not).
func (j *Journal) attach(create, wait bool) (*Handle, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failed != nil {
		return nil, j.failed
	}
	if j.closed {
		return nil, ErrClosed
	}
	// A transaction that has begun to commit must be frozen — every handle
	// ended — before its successor runs: the successor CoWs t's nodes, and a
	// copy taken while a handle of t still changes the original would lose
	// that change (btrfs blocks new transactions the same way until the
	// committing one's writers are done). So Start waits here; the rest of
	// t's commit (the writing) overlaps with t+1.
	for create && j.committing != nil && j.committing.handlesOpen > 0 && j.failed == nil && !j.closed {
		if !wait {
			return nil, ErrWouldWait
		}
		j.handlesDrained.Wait()
	}
	if j.failed != nil {
		return nil, j.failed
	}
	if j.closed {
		return nil, ErrClosed
	}
	t := j.running
	if t == nil {
		if !create {
			return nil, ErrNoTransaction
		}
		var err error
		if t, err = j.newTransaction(); err != nil {
			return nil, err
		}
	}
	if t.handlesOpen >= handlesOpenMax {
		assert.Failf("journal: %d handles open on transaction %d: handles leak (Start without End)", t.handlesOpen, t.transid)
	}
	t.handlesOpen++
	t.handlesEver++
	return &Handle{j: j, t: t}, nil
}

// Transid is the id of the handle's transaction: the generation that the
// changes made under it will carry.
func (h *Handle) Transid() Transid { return h.t.transid }

// End releases the handle. Once the last handle of a committing transaction
// ends, its commit proceeds. Ending a handle twice is a programmer error and
// panics: a second End would let the commit write a transaction that some
// other caller is still changing.
func (h *Handle) End() {
	swapped := h.ended.CompareAndSwap(false, true)
	if !swapped {
		assert.Failf("journal: handle of transaction %d ended twice", h.t.transid)
	}
	j, t := h.j, h.t
	j.mu.Lock()
	defer j.mu.Unlock()
	t.handlesOpen--
	assert.That(t.handlesOpen >= 0, "journal: open handles never go negative")
	if t.handlesOpen == 0 && j.committing == t {
		// The committer and any Start waiting for t to freeze wait on it.
		j.handlesDrained.Broadcast()
	}
}
