package journal

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestHandle_End_Twice(t *testing.T) {
	j, _ := openTest(t, Options{})
	h := mustStart(t, j)
	h.End()
	defer func() {
		msg, _ := recover().(string)
		if !strings.Contains(msg, "ended twice") {
			t.Fatalf("second End: recovered %q, want an 'ended twice' panic", msg)
		}
		if j.Running() != 1 {
			t.Fatalf("Running %d after the panic", j.Running())
		}
	}()
	h.End()
}

func TestJournal_Join_NoTransaction(t *testing.T) {
	j, _ := openTest(t, Options{})
	if _, err := j.Join(); !errors.Is(err, ErrNoTransaction) {
		t.Fatalf("Join with nothing running: %v, want ErrNoTransaction", err)
	}
	h := mustStart(t, j)
	h2, err := j.Join()
	if err != nil || h2.Transid() != h.Transid() {
		t.Fatalf("Join: %v, transid %d, want %d", err, h2.Transid(), h.Transid())
	}
	h.End()
	h2.End()
	if _, err := j.CommitNow(testContext(t)); err != nil {
		t.Fatal(err)
	}
	// Committed, nothing running again: Join creates nothing.
	if _, err := j.Join(); !errors.Is(err, ErrNoTransaction) {
		t.Fatalf("Join after commit: %v, want ErrNoTransaction", err)
	}
	if j.Running() != 0 {
		t.Fatalf("Running %d after a refused Join", j.Running())
	}
}

// openHandles is the test's own registry of open handles, so a Commit
// callback can record what was open while it ran.
type openHandles struct {
	mu   sync.Mutex
	open map[*Handle]Transid
}

func (o *openHandles) start(t *testing.T, j *Journal) *Handle {
	t.Helper()
	h := mustStart(t, j)
	o.mu.Lock()
	o.open[h] = h.Transid()
	o.mu.Unlock()
	return h
}

func (o *openHandles) end(h *Handle) {
	o.mu.Lock()
	delete(o.open, h)
	o.mu.Unlock()
	h.End()
}

func (o *openHandles) snapshot() []Transid {
	o.mu.Lock()
	defer o.mu.Unlock()
	var ids []Transid
	for _, id := range o.open {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// The commit of T waits for T's handles, and only T's: handles of T+1 start,
// run and end while T commits, and stay open across Options.Commit(T).
func TestJournal_Commit_WaitsForOwnHandles(t *testing.T) {
	j, r := openTest(t, Options{})
	handles := &openHandles{open: map[*Handle]Transid{}}
	var (
		seenMu sync.Mutex
		seen   = map[Transid][]Transid{} // transaction → handles open during its Commit
	)
	r.commitHook = func(tid Transid) error {
		seenMu.Lock()
		seen[tid] = handles.snapshot()
		seenMu.Unlock()
		return nil
	}

	a := handles.start(t, j) // T = 1
	b := handles.start(t, j) // T = 1
	committed := make(chan Transid, 1)
	go func() {
		tid, err := j.CommitNow(testContext(t))
		if err != nil {
			t.Errorf("CommitNow: %v", err)
		}
		committed <- tid
	}()
	waitFor(t, "1 committing", func() bool { return j.State(1) == TransCommitting })

	// Start waits while T still has open handles: T+1 must not begin
	// (and CoW T's nodes) while T is still being changed.
	started := make(chan *Handle, 1)
	go func() { started <- handles.start(t, j) }()
	handles.end(a)
	time.Sleep(5 * time.Millisecond) // give a wrong journal the chance to commit early or let Start through
	if calls := r.commitCalls(); len(calls) != 0 {
		t.Fatalf("Commit called %v while handle b of 1 was open", calls)
	}
	select {
	case h := <-started:
		t.Fatalf("Start joined %d while transaction 1 still had an open handle", h.Transid())
	default:
	}
	handles.end(b)
	c := <-started
	if c.Transid() != 2 {
		t.Fatalf("Start during 1's commit joined %d, want 2", c.Transid())
	}
	if tid := <-committed; tid != 1 {
		t.Fatalf("CommitNow returned %d, want 1", tid)
	}

	seenMu.Lock()
	during := seen[1]
	seenMu.Unlock()
	for _, tid := range during {
		if tid == 1 {
			t.Fatalf("handles open during Commit(1): %v: one of 1's own", during)
		}
	}
	if j.State(2) != TransRunning {
		t.Fatalf("State(2) %v, want running", j.State(2))
	}
	handles.end(c)
}

// While Options.Commit(T) itself runs (not just the wait for handles),
// Start, End and Join go on in T+1.
func TestJournal_Start_DuringCommit(t *testing.T) {
	j, r := openTest(t, Options{})
	inCommit, release := make(chan struct{}), make(chan struct{})
	r.commitHook = func(tid Transid) error {
		if tid == 1 {
			close(inCommit)
			<-release
		}
		return nil
	}
	mustStart(t, j).End()
	done := make(chan error, 1)
	go func() { _, err := j.CommitNow(testContext(t)); done <- err }()
	<-inCommit
	for range 10 {
		h := mustStart(t, j)
		if h.Transid() != 2 {
			t.Fatalf("Start during Commit(1): transid %d, want 2", h.Transid())
		}
		h2, err := j.Join()
		if err != nil || h2.Transid() != 2 {
			t.Fatalf("Join during Commit(1): %v %d", err, h2.Transid())
		}
		h2.End()
		h.End()
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestJournal_TryStart_Declines: while a commit waits for a handle of its
// transaction to end, TryStart returns ErrWouldWait at once and opens no
// handle (the commit goes on once the handle ends, with nothing more to
// wait for); once the transaction is frozen — while its Commit runs — and
// with no commit at all, TryStart starts a handle as Start does.
func TestJournal_TryStart_Declines(t *testing.T) {
	j, r := openTest(t, Options{})
	inCommit, release := make(chan struct{}), make(chan struct{})
	r.commitHook = func(tid Transid) error {
		if tid == 1 {
			close(inCommit)
			<-release
		}
		return nil
	}
	h := mustStart(t, j)
	done := make(chan error, 1)
	go func() { _, err := j.CommitNow(testContext(t)); done <- err }()
	declined := 0
	for declined == 0 {
		h2, err := j.TryStart()
		switch {
		case errors.Is(err, ErrWouldWait):
			declined++
		case err != nil:
			t.Fatal(err)
		default:
			// The commit has not begun: this joined transaction 1.
			h2.End()
		}
	}
	if _, err := j.TryStart(); !errors.Is(err, ErrWouldWait) {
		t.Fatalf("TryStart with the commit waiting for a handle: %v, want ErrWouldWait", err)
	}
	h.End()
	<-inCommit
	h3, err := j.TryStart()
	if err != nil || h3.Transid() != 2 {
		t.Fatalf("TryStart while Commit(1) runs: %v", err)
	}
	h3.End()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	h4, err := j.TryStart()
	if err != nil {
		t.Fatalf("TryStart with no commit: %v", err)
	}
	h4.End()
}
