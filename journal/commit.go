package journal

import (
	"context"
	"time"

	"ustore/internal/assert"
)

// committer is the journal's one committer goroutine: it commits
// transactions one at a time, in id order, until Close or a failure.
func (j *Journal) committer() {
	defer close(j.done)
	for {
		t := j.nextCommit()
		if t == nil {
			return
		}
		j.commit(t)
	}
}

// nextCommit waits until the running transaction should commit, makes it
// the committing one (from then on Start creates its successor), and waits
// for its open handles to end. It returns nil when the committer should
// stop: the journal failed, or it is closed and nothing runs.
func (j *Journal) nextCommit() *transaction {
	j.mu.Lock()
	defer j.mu.Unlock()
	for {
		if j.failed != nil || (j.closed && j.running == nil) {
			j.stop()
			return nil
		}
		t := j.running
		if t != nil && (t.reason != reasonNone || j.closed) {
			j.beginCommit(t)
			return t
		}
		// Wait for a trigger. It sets its condition under mu and then
		// kicks; the kick channel holds one wake-up, so a kick sent while we
		// were not yet waiting is not lost.
		j.mu.Unlock()
		<-j.kick
		j.mu.Lock()
	}
}

// beginCommit moves t from running to committing and waits for its open
// handles. Called with j.mu held; the wait releases it, so Start and End go
// on meanwhile (new handles go to t+1).
func (j *Journal) beginCommit(t *transaction) {
	assert.That(j.committing == nil, "journal: one transaction commits at a time")
	assert.That(t.handlesEver > 0, "journal: no empty transaction runs, so none commits")
	t.timer.Stop()
	j.running = nil
	j.committing = t
	for t.handlesOpen > 0 {
		j.handlesDrained.Wait()
	}
	assert.That(t.handlesOpen == 0 && j.committing == t, "journal: Commit runs with no handle of t open")
}

// commit runs Options.Commit for t (committing, no handle open) and
// publishes the result: commitSeq on success, the journal's failure
// otherwise.
func (j *Journal) commit(t *transaction) {
	began := time.Now()
	ctx := t.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	err := j.opts.Commit(ctx, t.transid)
	if err != nil {
		j.fail(t, err)
		return
	}

	// Publish: the store of commitSeq is the commit point for every reader
	// of Committed, so it comes after all of Options.Commit's work.
	prev := j.commitSeq.Load()
	assert.That(uint64(t.transid) == prev+1, "journal: commitSeq grows by one per commit, in id order")
	j.commitSeq.Store(uint64(t.transid))

	// Committed runs before the waiters wake: whoever waited for t (a
	// sync, a test's fsck) then sees t's aftermath — its pinned blocks
	// released — as well as t itself.
	if j.opts.Committed != nil {
		j.opts.Committed(t.transid)
	}
	j.settledSeq.Store(uint64(t.transid))
	j.mu.Lock()
	reason, handles, dirty := t.reason, t.handlesEver, t.dirtyBytes
	j.committing = nil
	j.wakeWaiters()
	j.mu.Unlock()
	j.log.Debug("journal: committed", "transid", t.transid, "reason", reason.String(),
		"handles", handles, "dirty_bytes", dirty,
		"age", began.Sub(t.began), "commit", time.Since(began))
}

// fail records that t's commit returned cause: the journal becomes
// read-only, commitSeq stays where it is, and everyone waiting learns it.
func (j *Journal) fail(t *transaction, cause error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	assert.That(j.failed == nil, "journal: the committer stops at the first failure")
	j.failed = &FailedError{Transid: t.transid, Cause: cause}
	j.committing = nil
	// The running transaction, if any, can never commit now: nothing may
	// join it, and State calls it aborted. Its open handles still End.
	if j.running != nil {
		j.running.timer.Stop()
		j.running = nil
	}
	j.wakeWaiters()
	// Logged here, once: the committer stops after this, and every later
	// call gets the error value instead of a log line.
	j.log.Error("journal: commit failed, store is read-only",
		"transid", t.transid, "commit_seq", j.commitSeq.Load(), "err", cause)
}

// stop marks the committer gone and wakes every waiter, who then learns
// that what it waits for will never commit. Called with j.mu held.
func (j *Journal) stop() {
	if j.running != nil {
		j.running.timer.Stop()
	}
	j.stopped = true
	j.wakeWaiters()
}

// wakeWaiters wakes every WaitCommitted: each rechecks its condition and
// waits again on the fresh channel if it still must. Called with j.mu held.
func (j *Journal) wakeWaiters() {
	close(j.commitEvent)
	j.commitEvent = make(chan struct{})
}
