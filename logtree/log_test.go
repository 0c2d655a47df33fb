package logtree

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"ustore/dev/memdev"
	"ustore/engine"
)

// waitLimit bounds the waits for something that must happen: past it the
// mechanism under test is missing, not slow.
const waitLimit = 30 * time.Second

// TestLog_LastLogCommit_TakesNoLock: the committer publishes
// lastLogCommit without logMutex, and a reader (the store's inLog, an
// fsync's fast path) reads it without logMutex — the 2021 btrfs fsync
// patch. The test holds l.mu from the moment the sync is writing its
// nodes: the new generation must still become visible, to a reader on
// another goroutine, before the mutex is released. Were the store moved
// under the mutex, the committer would block on it and the generation
// would never show.
func TestLog_LastLogCommit_TakesNoLock(t *testing.T) {
	d := memdev.New(64 << 20)
	if err := engine.Mkfs(d, engine.MkfsOptions{NodeSize: 4096}); err != nil {
		t.Fatal(err)
	}
	e, err := engine.Mount(d, engine.Options{CommitInterval: 5 * time.Minute,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	l := New(e)
	tr, err := e.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer tr.End()
	c, lt, err := l.Join(tr)
	if err != nil {
		t.Fatal(err)
	}
	w, err := l.Writer(c, lt)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Set(engine.Key{ObjectID: 1000, Type: 1}, []byte("item")); err != nil {
		t.Fatal(err)
	}
	if got := l.LastLogCommit(); got >= c.Generation() {
		t.Fatalf("before the sync: lastLogCommit %v, context's generation %v", got, c.Generation())
	}
	h := d.HoldNext(memdev.HoldWriteDurable) // the log sync, before its superblock is durable
	synced := make(chan error, 1)
	go func() { synced <- l.Sync(context.Background(), c) }()
	<-h.Held()

	l.mu.Lock()
	h.Release()
	seen := make(chan engine.LogGen, 1)
	go func() {
		deadline := time.Now().Add(waitLimit)
		for l.LastLogCommit() < c.Generation() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		seen <- l.LastLogCommit()
	}()
	got := <-seen
	select {
	case err := <-synced:
		t.Errorf("Sync returned (%v) while logMutex was held: it must take it after publishing", err)
	default:
	}
	l.mu.Unlock()
	if got != c.Generation() {
		t.Fatalf("while logMutex was held: lastLogCommit %v, want the synced generation %v", got, c.Generation())
	}
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
}
