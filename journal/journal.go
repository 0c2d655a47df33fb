package journal

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"ustore/internal/assert"
)

// Journal hands out transaction ids and handles, decides when the running
// transaction commits, and runs the commits one after another on its
// committer goroutine.
//
// Who touches what. opts and log are set by Open and only read after.
// commitSeq is written only by the committer goroutine, once per successful
// commit, after Options.Commit returned; anyone loads it, with no lock —
// that is the whole point of Committed. Everything else (running,
// committing, nextTransid, commitEvent, failed, closed, stopped, and every
// field of a transaction but its transid, began and timer) is guarded by mu.
// mu is held only for bookkeeping: never across Options.Commit or
// Options.Committed, never while waiting on a channel; the committer waits
// for handles on handlesDrained, a sync.Cond on mu, which releases it. kick
// and done are channels and need no lock: kick is sent to (never blocking,
// capacity 1) after changing, under mu, a condition the committer waits for;
// done is closed by the committer when it exits. A Handle's ended flag is
// its own atomic.
type Journal struct {
	opts Options
	log  *slog.Logger

	// commitSeq is the id of the newest durable transaction (jbd2:
	// j_commit_sequence). It starts at FirstTransid-1 and grows by one per
	// commit.
	commitSeq atomic.Uint64
	// settledSeq follows commitSeq once Options.Committed has returned for
	// it: WaitCommitted and CommitNow wait for it, so their callers see a
	// commit's aftermath (its pinned blocks and log released), as the
	// options promise. Committed, the durability check, reads commitSeq.
	settledSeq atomic.Uint64

	mu sync.Mutex
	// handlesDrained is signalled when the committing transaction's last
	// open handle ends. Its L is &mu.
	handlesDrained sync.Cond
	// running is the transaction handles join; nil when none runs.
	running *transaction
	// committing is the one transaction being committed; nil when none is.
	committing *transaction
	// nextTransid is the id the next created transaction takes.
	nextTransid Transid
	// commitEvent is closed, and replaced, each time commitSeq moves or the
	// journal fails or stops: WaitCommitted's broadcast. A waiter takes it
	// under mu and rechecks its condition after each close, so none leaks and
	// no wake-up is lost.
	commitEvent chan struct{}
	// failed is the sticky failure, nil while every commit has succeeded.
	failed *FailedError
	// closed: Close was called; no handle may start.
	closed bool
	// stopped: the committer goroutine has exited; no commit will happen.
	stopped bool

	kick chan struct{}
	done chan struct{}
}

// Open checks opts and starts the journal's committer goroutine. No
// transaction runs until the first Start.
func Open(opts Options) (*Journal, error) {
	opts, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	j := &Journal{
		opts:        opts,
		log:         opts.Logger,
		nextTransid: opts.FirstTransid,
		commitEvent: make(chan struct{}),
		kick:        make(chan struct{}, 1),
		done:        make(chan struct{}),
	}
	j.handlesDrained.L = &j.mu
	j.commitSeq.Store(uint64(opts.FirstTransid - 1))
	j.settledSeq.Store(uint64(opts.FirstTransid - 1))
	go j.committer()
	return j, nil
}

// Close refuses new handles (ErrClosed), commits the running transaction
// once its open handles have ended, and stops the committer. It returns the
// journal's failure if a commit failed (before or during Close), or ctx's
// error if ctx ends first — the final commit then still completes in the
// background. Close may be called more than once.
func (j *Journal) Close(ctx context.Context) error {
	j.mu.Lock()
	j.closed = true
	if j.running != nil && j.running.reason == reasonNone {
		j.running.reason = reasonClose
	}
	j.mu.Unlock()
	j.kickCommitter()

	select {
	case <-j.done:
	case <-ctx.Done():
		return fmt.Errorf("journal: close: waiting for the final commit: %w", context.Cause(ctx))
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failed != nil {
		return j.failed
	}
	return nil
}

// Running is the id of the running transaction, or 0 when none runs (as
// after a failure: the transaction that ran then is aborted).
func (j *Journal) Running() Transid {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.running == nil {
		return 0
	}
	return j.running.transid
}

// State says where transaction t is in its life cycle. An id not handed out
// yet is TransUnknown; once the journal has failed, every id handed out and
// not committed is TransAborted.
func (j *Journal) State(t Transid) TransState {
	// Committed first: commitSeq moves before committing is cleared, so a
	// transaction is never seen as neither committing nor committed.
	if j.Committed(t) {
		return TransCommitted
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case j.committing != nil && j.committing.transid == t:
		return TransCommitting
	case j.running != nil && j.running.transid == t:
		return TransRunning
	case t >= j.nextTransid:
		return TransUnknown
	}
	// t was handed out, is neither running nor committing, and was not
	// committed when we looked: only a failure leaves such a transaction.
	// (It may have been committed since: look again.)
	if j.committed(t) {
		return TransCommitted
	}
	assert.That(j.failed != nil, "journal: a transaction handed out is running, committing or committed unless the journal failed")
	return TransAborted
}
