package journal

import "ustore/internal/assert"

// The commit triggers: the interval timer of each transaction (armed in
// newTransaction), dirty bytes (AddDirty), explicit (CommitNow) and Close.
// Each marks the running transaction under mu and kicks the committer.

// requestCommit asks for t's commit, for reason, if t still runs. The
// interval timer calls it from its own goroutine; a timer that fires after t
// began committing finds t no longer running and does nothing.
func (j *Journal) requestCommit(t *transaction, reason commitReason) {
	j.mu.Lock()
	if j.running != t {
		j.mu.Unlock()
		return
	}
	if t.reason == reasonNone {
		t.reason = reason
	}
	j.mu.Unlock()
	j.kickCommitter()
}

// kickCommitter wakes the committer if it waits for a trigger. It never
// blocks: one pending kick is enough, since the committer rechecks every
// condition when it wakes.
func (j *Journal) kickCommitter() {
	select {
	case j.kick <- struct{}{}:
	default:
	}
}

// AddDirty adds n bytes of dirty metadata to the running transaction; once
// its total passes DirtyBytesMax, the transaction is committed. With no
// transaction running the bytes belong to the one committing, whose commit
// is already writing them out, so they are not counted. n must not be
// negative.
func (j *Journal) AddDirty(n int64) {
	assert.That(n >= 0, "journal: AddDirty of a negative byte count")
	j.mu.Lock()
	t := j.running
	if t == nil {
		j.mu.Unlock()
		return
	}
	before := t.dirtyBytes
	t.dirtyBytes += n
	assert.That(t.dirtyBytes >= before, "journal: dirty byte count overflowed")
	crossed := before <= j.opts.DirtyBytesMax && t.dirtyBytes > j.opts.DirtyBytesMax
	if crossed && t.reason == reasonNone {
		t.reason = reasonDirty
	}
	j.mu.Unlock()
	if crossed {
		j.kickCommitter()
	}
}
