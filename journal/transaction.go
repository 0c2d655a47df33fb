package journal

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"ustore/internal/assert"
)

// Transid is a transaction id (btrfs: transid; the generation its commit
// writes). Ids grow by one per transaction and are never reused; 0 means
// "none", and Committed(0) is always true.
type Transid uint64

// String writes the id in decimal, as every message, span attribute and dump
// has; a LogGen writes its Transid the same way ("T.sub"), and an
// engine.Bytenr too, so the three read alike side by side.
func (t Transid) String() string { return strconv.FormatUint(uint64(t), 10) }

// TransState is where a transaction is in its life cycle.
type TransState uint8

const (
	// TransUnknown: an id not handed out yet (a future transaction).
	TransUnknown TransState = iota
	// TransRunning: handles may still join it.
	TransRunning
	// TransCommitting: no handle may join it any more; its commit waits for
	// its open handles or runs Options.Commit.
	TransCommitting
	// TransCommitted: durable; Committed(t) is true.
	TransCommitted
	// TransAborted: the journal failed before this transaction was durable;
	// it never will be.
	TransAborted
)

func (s TransState) String() string {
	switch s {
	case TransUnknown:
		return "unknown"
	case TransRunning:
		return "running"
	case TransCommitting:
		return "committing"
	case TransCommitted:
		return "committed"
	case TransAborted:
		return "aborted"
	}
	return fmt.Sprintf("TransState(%d)", uint8(s))
}

// commitReason says which trigger asked for a transaction's commit first;
// the commit's log line carries it.
type commitReason uint8

const (
	reasonNone commitReason = iota
	reasonInterval
	reasonDirty
	reasonExplicit
	reasonClose
)

func (r commitReason) String() string {
	switch r {
	case reasonNone:
		return "none"
	case reasonInterval:
		return "interval"
	case reasonDirty:
		return "dirty_bytes"
	case reasonExplicit:
		return "explicit"
	case reasonClose:
		return "close"
	}
	return fmt.Sprintf("commitReason(%d)", uint8(r))
}

// transaction is the journal's record of one transaction. transid and began
// never change; timer is set once, under Journal.mu, when the transaction is
// created; every other field is guarded by Journal.mu.
type transaction struct {
	transid Transid
	began   time.Time

	// handlesOpen counts handles started and not yet ended; the commit
	// waits for it to reach 0.
	handlesOpen int
	// handlesEver counts every handle that joined; a transaction is created
	// by its first handle, so it is never 0 (Invariant 5).
	handlesEver int
	// dirtyBytes is what AddDirty reported while this transaction ran.
	dirtyBytes int64
	// reason is the first trigger that asked to commit this transaction;
	// reasonNone while none has.
	reason commitReason
	// timer fires CommitInterval after began (the interval trigger).
	timer *time.Timer
	// ctx is the context of the first CommitNow that asked for this
	// commit, without its cancellation: Options.Commit gets its values —
	// the caller's trace span, so that a commit an fsync forced shows up
	// under that fsync. nil for the other triggers.
	ctx context.Context
}

// newTransaction creates the running transaction, with the next id, for the
// Start that is about to join it. Called with j.mu held.
func (j *Journal) newTransaction() (*transaction, error) {
	assert.That(j.running == nil, "journal: a transaction is created only when none runs")
	id := j.nextTransid
	if id > transidMax {
		// Not reachable at one transaction a millisecond for 500 million years;
		// refuse rather than wrap to 0.
		return nil, fmt.Errorf("%w: next would be %d", ErrTransidsExhausted, id)
	}
	assert.That(uint64(id) == j.commitSeq.Load()+1 || (j.committing != nil && id == j.committing.transid+1),
		"journal: a new transaction follows the last committed or the committing one")
	t := &transaction{transid: id, began: time.Now()}
	t.timer = time.AfterFunc(j.opts.CommitInterval, func() { j.requestCommit(t, reasonInterval) })
	j.nextTransid = id + 1
	j.running = t
	return t, nil
}
