package journal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// CommitNow returns only once the engine's Commit has finished (its last
// flush), and the id it returns is then Committed.
func TestJournal_CommitNow_WaitsForDurability(t *testing.T) {
	j, r := openTest(t, Options{})
	var durable atomic.Uint64
	r.commitHook = func(tid Transid) error {
		time.Sleep(10 * time.Millisecond) // the write-out and flushes
		durable.Store(uint64(tid))
		return nil
	}
	h := mustStart(t, j)
	h.End()
	tid, err := j.CommitNow(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	if tid != h.Transid() || durable.Load() != uint64(tid) || !j.Committed(tid) {
		t.Fatalf("CommitNow = %d; durable %d, Committed %v", tid, durable.Load(), j.Committed(tid))
	}
	// Nothing running or committing: the last committed id, with no commit.
	if tid2, err := j.CommitNow(testContext(t)); err != nil || tid2 != tid {
		t.Fatalf("idle CommitNow = %d, %v; want %d", tid2, err, tid)
	}
	if calls := r.commitCalls(); len(calls) != 1 {
		t.Fatalf("commits %v, want one", calls)
	}
}

func TestJournal_CommitNow_ContextDone(t *testing.T) {
	j, _ := openTest(t, Options{})
	h := mustStart(t, j)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if _, err := j.CommitNow(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("CommitNow with a handle open: %v, want DeadlineExceeded", err)
	}
	// The request stands: ending the handle lets the commit happen.
	h.End()
	if err := j.WaitCommitted(testContext(t), h.Transid()); err != nil {
		t.Fatal(err)
	}
}

func TestJournal_Commit_IntervalTrigger(t *testing.T) {
	j, r := openTest(t, Options{CommitInterval: 20 * time.Millisecond})
	began := time.Now()
	h := mustStart(t, j)
	h.End()
	if err := j.WaitCommitted(testContext(t), h.Transid()); err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(began); elapsed < 20*time.Millisecond {
		t.Fatalf("committed after %v, before the 20ms interval", elapsed)
	}
	if calls := r.commitCalls(); len(calls) != 1 || calls[0] != 1 {
		t.Fatalf("commits %v, want [1]", calls)
	}
}

// The interval counts from the transaction's start, not from its last
// handle: a transaction that always has a handle open is still committed.
func TestJournal_Commit_IntervalFromStart(t *testing.T) {
	j, _ := openTest(t, Options{CommitInterval: 20 * time.Millisecond})
	h := mustStart(t, j)
	first := h.Transid()
	h.End()
	deadline := time.Now().Add(testTimeout)
	for !j.Committed(first) {
		// Busy all the time — a handle starts every millisecond — but the
		// interval, counted from the start, still commits.
		if time.Now().After(deadline) {
			t.Fatal("a transaction kept busy was never committed")
		}
		mustStart(t, j).End()
		time.Sleep(time.Millisecond)
	}
}

// No handle, no transaction, no commit: the interval passes without Commit.
func TestJournal_Commit_IntervalSkipsEmpty(t *testing.T) {
	j, r := openTest(t, Options{CommitInterval: 10 * time.Millisecond})
	h := mustStart(t, j)
	h.End()
	if err := j.WaitCommitted(testContext(t), 1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(40 * time.Millisecond) // four intervals with nothing running
	if calls := r.commitCalls(); len(calls) != 1 {
		t.Fatalf("commits %v: an empty interval was committed", calls)
	}
	if j.Running() != 0 || j.State(2) != TransUnknown {
		t.Fatalf("Running %d State(2) %v: an empty transaction was created", j.Running(), j.State(2))
	}
}

func TestJournal_AddDirty_Trigger(t *testing.T) {
	j, r := openTest(t, Options{DirtyBytesMax: 1000})
	var h *Handle
	// commitWanted looks at h's transaction, not at j.running: once asked,
	// the committer may already have moved it to committing.
	commitWanted := func() bool {
		j.mu.Lock()
		defer j.mu.Unlock()
		return h.t.reason != reasonNone
	}
	j.AddDirty(500) // nothing runs: not counted
	h = mustStart(t, j)
	j.AddDirty(600)
	j.AddDirty(400) // exactly at the budget: not past it
	if commitWanted() {
		t.Fatal("commit requested at 1000 of 1000 dirty bytes")
	}
	j.AddDirty(1) // past it
	if !commitWanted() {
		t.Fatal("no commit requested at 1001 of 1000 dirty bytes")
	}
	h.End()
	if err := j.WaitCommitted(testContext(t), h.Transid()); err != nil {
		t.Fatal(err)
	}
	if calls := r.commitCalls(); len(calls) != 1 {
		t.Fatalf("commits %v", calls)
	}
	// The next transaction counts from zero.
	h = mustStart(t, j)
	j.AddDirty(999)
	if commitWanted() {
		t.Fatal("dirty bytes carried over to the next transaction")
	}
	h.End()
}

// A failed commit makes the journal read-only: commitSeq stays where it was,
// and every later call says why.
func TestJournal_Commit_Failure(t *testing.T) {
	logs := &logBuffer{}
	j, r := openTest(t, Options{
		FirstTransid: 41,
		Logger:       slog.New(slog.NewTextHandler(logs, nil)),
	})
	cause := errors.New("superblock write: EIO")
	r.commitHook = func(tid Transid) error {
		if tid == 42 {
			return cause
		}
		return nil
	}
	mustStart(t, j).End()
	if _, err := j.CommitNow(testContext(t)); err != nil {
		t.Fatalf("commit of 41: %v", err)
	}

	h := mustStart(t, j) // 42
	waiter := make(chan error, 1)
	go func() { waiter <- j.WaitCommitted(testContext(t), 42) }()
	h.End()
	_, err := j.CommitNow(testContext(t))
	checkFailed := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrFailed) || !errors.Is(err, cause) {
			t.Fatalf("%s: %v, want ErrFailed wrapping the cause", what, err)
		}
	}
	checkFailed("CommitNow", err)
	want := "journal: commit of transaction 42 failed, store is read-only: superblock write: EIO"
	if err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
	var fe *FailedError
	if !errors.As(err, &fe) || fe.Transid != 42 {
		t.Fatalf("errors.As FailedError: %v", fe)
	}
	checkFailed("WaitCommitted waiting since before", <-waiter)

	_, err = j.Start()
	checkFailed("Start", err)
	_, err = j.Join()
	checkFailed("Join", err)
	_, err = j.CommitNow(testContext(t))
	checkFailed("CommitNow again", err)
	checkFailed("WaitCommitted(42)", j.WaitCommitted(testContext(t), 42))
	checkFailed("WaitCommitted(43)", j.WaitCommitted(testContext(t), 43))
	checkFailed("Close", j.Close(testContext(t)))

	// What was durable stays durable.
	if !j.Committed(41) || j.Committed(42) || j.commitSeq.Load() != 41 {
		t.Fatalf("after the failure: commitSeq %d", j.commitSeq.Load())
	}
	if err := j.WaitCommitted(testContext(t), 41); err != nil {
		t.Fatalf("WaitCommitted(41), committed before the failure: %v", err)
	}
	if j.State(41) != TransCommitted || j.State(42) != TransAborted || j.State(43) != TransUnknown {
		t.Fatalf("states 41 %v, 42 %v, 43 %v", j.State(41), j.State(42), j.State(43))
	}
	if got := r.committedCalls(); fmt.Sprint(got) != "[41]" {
		t.Fatalf("Committed callbacks %v, want [41]", got)
	}
	if n := strings.Count(logs.String(), "level=ERROR"); n != 1 {
		t.Fatalf("%d error lines logged, want 1:\n%s", n, logs)
	}
}

// A transaction running when an earlier one fails is aborted: its handles
// still end, it never commits, and nothing joins it.
func TestJournal_Commit_FailureAbortsRunning(t *testing.T) {
	j, r := openTest(t, Options{})
	inCommit, release := make(chan struct{}), make(chan struct{})
	r.commitHook = func(Transid) error {
		close(inCommit)
		<-release
		return errors.New("flush: EIO")
	}
	mustStart(t, j).End()
	go func() { _, _ = j.CommitNow(testContext(t)) }()
	<-inCommit
	h := mustStart(t, j) // 2, while 1 commits
	close(release)
	waitFor(t, "failure", func() bool { return j.State(1) == TransAborted })
	if j.State(2) != TransAborted || j.Running() != 0 {
		t.Fatalf("State(2) %v Running %d, want aborted, 0", j.State(2), j.Running())
	}
	j.AddDirty(1 << 40) // no transaction to charge, no commit to start
	h.End()
	if _, err := j.Join(); !errors.Is(err, ErrFailed) {
		t.Fatalf("Join: %v", err)
	}
	if calls := r.commitCalls(); len(calls) != 1 {
		t.Fatalf("commits %v after the failure", calls)
	}
}
