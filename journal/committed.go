package journal

import (
	"context"
	"fmt"
)

// Committed reports whether transaction t is durable: t <= commitSeq. It is
// one atomic load — no lock, no channel — because fsync asks it on every
// call (jbd2_transaction_committed, 2024: dropping j_state_lock for a load
// of j_commit_sequence gained 10–20% on concurrent direct I/O). It is right
// without a lock because commitSeq only grows (Invariant 1) and is stored
// only after the commit's last flush: a true answer is final, and a false
// one is as fresh as any locked answer could be once the lock is dropped.
//
// With Ablations.CommittedLocked (a benchmark's ablation) it takes mu first,
// as jbd2 did before the fix; the answer is the same.
func (j *Journal) Committed(t Transid) bool {
	if j.opts.CommittedLocked {
		j.mu.Lock()
		defer j.mu.Unlock()
	}
	return j.committed(t)
}

// committed is Committed without the ablation's lock: the journal's own
// callers ask it while holding mu.
func (j *Journal) committed(t Transid) bool {
	return uint64(t) <= j.commitSeq.Load()
}

// settled reports whether t is committed and Options.Committed has
// returned for it.
func (j *Journal) settled(t Transid) bool {
	return uint64(t) <= j.settledSeq.Load()
}

// WaitCommitted returns nil once Committed(t) and Options.Committed has
// returned for t (its aftermath is visible). It returns an error wrapping
// ErrFailed if the journal fails before t is committed, ErrClosed if the
// journal stopped without committing t (t was never handed out, or ran
// after Close), or ctx's error. It does not ask for a commit: use CommitNow
// for that. A t committed before a failure is still committed: nil.
func (j *Journal) WaitCommitted(ctx context.Context, t Transid) error {
	for {
		if j.settled(t) {
			return nil
		}
		j.mu.Lock()
		// Recheck under mu: the committer stores settledSeq before it takes
		// mu to wake waiters, so once we hold mu either we see the new
		// settledSeq or our channel is the one it will close.
		if j.settled(t) {
			j.mu.Unlock()
			return nil
		}
		if j.failed != nil {
			err := j.failed
			j.mu.Unlock()
			return err
		}
		if j.stopped {
			j.mu.Unlock()
			return fmt.Errorf("%w: transaction %d was not committed before the journal stopped", ErrClosed, t)
		}
		event := j.commitEvent
		j.mu.Unlock()

		select {
		case <-event:
		case <-ctx.Done():
			return fmt.Errorf("journal: waiting for transaction %d to commit: %w", t, context.Cause(ctx))
		}
	}
}

// CommitNow commits the running transaction and waits until it is durable,
// returning its id. With none running it waits for the committing one (it
// holds what ended before now), and with none committing either it returns
// the last committed id at once. A caller must not hold a handle of the
// running transaction: the commit would wait for it forever. If ctx ends
// first, the commit still happens; CommitNow returns ctx's error.
func (j *Journal) CommitNow(ctx context.Context) (Transid, error) {
	j.mu.Lock()
	if j.failed != nil {
		err := j.failed
		j.mu.Unlock()
		return 0, err
	}
	var target Transid
	kick := false
	switch {
	case j.running != nil:
		target = j.running.transid
		if j.running.reason == reasonNone {
			j.running.reason = reasonExplicit
			j.running.ctx = context.WithoutCancel(ctx)
		}
		kick = true
	case j.committing != nil:
		target = j.committing.transid
	default:
		target = Transid(j.commitSeq.Load())
	}
	j.mu.Unlock()
	if kick {
		j.kickCommitter()
	}
	if err := j.WaitCommitted(ctx, target); err != nil {
		return 0, err
	}
	return target, nil
}
