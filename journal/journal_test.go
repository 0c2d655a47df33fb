package journal

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// testTimeout bounds every wait of these tests, so that a bug shows as a
// failure, not a hung test binary.
const testTimeout = 2 * time.Second

// recorder is a fake engine: it records the commits the journal asks for.
type recorder struct {
	mu        sync.Mutex
	commits   []Transid // Options.Commit calls, in order
	committed []Transid // Options.Committed calls, in order
	// commitHook, when set, runs inside Options.Commit and gives its result.
	commitHook func(t Transid) error
}

func (r *recorder) commit(_ context.Context, t Transid) error {
	r.mu.Lock()
	r.commits = append(r.commits, t)
	hook := r.commitHook
	r.mu.Unlock()
	if hook != nil {
		return hook(t)
	}
	return nil
}

func (r *recorder) onCommitted(t Transid) {
	r.mu.Lock()
	r.committed = append(r.committed, t)
	r.mu.Unlock()
}

func (r *recorder) commitCalls() []Transid {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Transid(nil), r.commits...)
}

func (r *recorder) committedCalls() []Transid {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Transid(nil), r.committed...)
}

// quietLogger drops what the journal logs; tests that look at the log make
// their own.
func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// openTest opens a journal whose Commit and Committed go to a new recorder
// (unless opts sets them) and closes it when the test ends. The default
// interval is long so that only the triggers a test pulls fire.
func openTest(t testing.TB, opts Options) (*Journal, *recorder) {
	t.Helper()
	r := &recorder{}
	if opts.Commit == nil {
		opts.Commit = r.commit
	}
	if opts.Committed == nil {
		opts.Committed = r.onCommitted
	}
	if opts.CommitInterval == 0 {
		opts.CommitInterval = time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	j, err := Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		_ = j.Close(ctx)
	})
	return j, r
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it holds or testTimeout passes. Only tests poll;
// the journal never does.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func mustStart(t testing.TB, j *Journal) *Handle {
	t.Helper()
	h, err := j.Start()
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return h
}

func TestOpen_Options_Invalid(t *testing.T) {
	commit := func(context.Context, Transid) error { return nil }
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"no commit", Options{}},
		{"negative interval", Options{Commit: commit, CommitInterval: -time.Second}},
		{"interval too long", Options{Commit: commit, CommitInterval: commitIntervalMax + time.Second}},
		{"negative dirty", Options{Commit: commit, DirtyBytesMax: -1}},
		{"no ids left", Options{Commit: commit, FirstTransid: transidMax + 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Open(tc.opts); !errors.Is(err, ErrOptions) {
				t.Fatalf("Open: got %v, want ErrOptions", err)
			}
		})
	}
}

func TestOpen_Options_Defaults(t *testing.T) {
	o, err := Options{Commit: func(context.Context, Transid) error { return nil }}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	if o.CommitInterval != 5*time.Second || o.DirtyBytesMax != 64<<20 || o.FirstTransid != 1 || o.Logger == nil {
		t.Fatalf("defaults: %+v", o)
	}
	j, _ := openTest(t, Options{})
	if !j.Committed(0) || j.Committed(1) || j.Running() != 0 || j.State(1) != TransUnknown {
		t.Fatalf("fresh journal: Committed(0) %v Committed(1) %v Running %d State(1) %v",
			j.Committed(0), j.Committed(1), j.Running(), j.State(1))
	}
}

func TestJournal_State_Transitions(t *testing.T) {
	j, r := openTest(t, Options{FirstTransid: 42})
	gate := make(chan struct{})
	r.commitHook = func(Transid) error { <-gate; return nil }

	if got := j.State(41); got != TransCommitted {
		t.Fatalf("State(41) before any transaction: %v, want committed (mounted)", got)
	}
	if got := j.State(42); got != TransUnknown {
		t.Fatalf("State(42) before Start: %v, want unknown", got)
	}
	h := mustStart(t, j)
	if h.Transid() != 42 || j.Running() != 42 || j.State(42) != TransRunning {
		t.Fatalf("after Start: transid %d Running %d State %v", h.Transid(), j.Running(), j.State(42))
	}
	h.End()

	done := make(chan error, 1)
	go func() { _, err := j.CommitNow(testContext(t)); done <- err }()
	waitFor(t, "42 committing", func() bool { return j.State(42) == TransCommitting })
	if j.Running() != 0 || j.Committed(42) {
		t.Fatalf("while committing: Running %d Committed %v", j.Running(), j.Committed(42))
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatalf("CommitNow: %v", err)
	}
	if j.State(42) != TransCommitted || !j.Committed(42) || j.State(43) != TransUnknown {
		t.Fatalf("after commit: State(42) %v Committed %v State(43) %v", j.State(42), j.Committed(42), j.State(43))
	}
	// Options.Committed runs after waiters are woken: wait for it.
	waitFor(t, "Committed(42) callback", func() bool { return len(r.committedCalls()) == 1 })
	if got := r.committedCalls(); got[0] != 42 {
		t.Fatalf("Committed callbacks %v, want [42]", got)
	}
	if h2 := mustStart(t, j); h2.Transid() != 43 {
		t.Fatalf("next transaction %d, want 43", h2.Transid())
	} else {
		h2.End()
	}
}

func TestJournal_Close_CommitsPending(t *testing.T) {
	j, r := openTest(t, Options{})
	h1 := mustStart(t, j)
	h2 := mustStart(t, j)
	h1.End()

	closed := make(chan error, 1)
	go func() { closed <- j.Close(testContext(t)) }()
	// Close refuses new handles at once, and waits for h2 before committing.
	waitFor(t, "Start refused", func() bool {
		h, err := j.Start()
		if err == nil {
			h.End() // Close has not begun yet
		}
		return errors.Is(err, ErrClosed)
	})
	if _, err := j.Join(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Join after Close: %v, want ErrClosed", err)
	}
	if j.Committed(1) {
		t.Fatal("transaction 1 committed while a handle was open")
	}
	h2.End()
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !j.Committed(1) || len(r.commitCalls()) != 1 {
		t.Fatalf("after Close: Committed(1) %v commits %v", j.Committed(1), r.commitCalls())
	}
	if err := j.Close(testContext(t)); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if got, err := j.CommitNow(testContext(t)); err != nil || got != 1 {
		t.Fatalf("CommitNow after Close: %d, %v; want 1, nil", got, err)
	}
	if err := j.WaitCommitted(testContext(t), 2); !errors.Is(err, ErrClosed) {
		t.Fatalf("WaitCommitted(2) after Close: %v, want ErrClosed", err)
	}
}

func TestJournal_Close_ContextDone(t *testing.T) {
	j, _ := openTest(t, Options{})
	h := mustStart(t, j)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := j.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close with a handle open and ctx done: %v, want context.Canceled", err)
	}
	h.End()
	if err := j.Close(testContext(t)); err != nil || !j.Committed(1) {
		t.Fatalf("Close: %v, Committed(1) %v", err, j.Committed(1))
	}
}

// logBuffer is a slog handler target that tests can read.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
