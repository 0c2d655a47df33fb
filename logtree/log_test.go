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
	w, err := l.Writer(lt)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Set(engine.Key{ObjectID: 1000, Type: 1}, []byte("item")); err != nil {
		t.Fatal(err)
	}
	if got := l.LastLogCommit(); got >= c.Generation() {
		t.Fatalf("before the sync: lastLogCommit %v, context's generation %v", got, c.Generation())
	}
	h := d.HoldNext(memdev.HoldWrite) // the log sync's writes, before they are durable
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

// TestLog_Sync_OverlapsTheFlushAhead: a log sync's writes go while the
// sync ahead of it is flushing, but not while the one ahead of that is
// undurable (invariant 2: at most two syncs undurable, replay's window of
// three records), and every sync is acknowledged in order, only once its
// own flush and the flush ahead of it returned. The first sync's flush is
// held: the second must write beside it (the old one-sync-at-a-time log
// never did), the third must not write, and none may return.
func TestLog_Sync_OverlapsTheFlushAhead(t *testing.T) {
	ctx := context.Background()
	d := memdev.New(64 << 20)
	if err := engine.Mkfs(d, engine.MkfsOptions{NodeSize: 4096}); err != nil {
		t.Fatal(err)
	}
	e, err := engine.Mount(d, engine.Options{CommitInterval: 5 * time.Minute,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	l := New(e)
	tr, err := e.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer tr.End()
	logOne := func(obj uint64) *Ctx {
		t.Helper()
		c, lt, err := l.Join(tr)
		if err != nil {
			t.Fatal(err)
		}
		w, err := l.Writer(lt)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Set(engine.Key{ObjectID: obj, Type: 1}, []byte("item")); err != nil {
			t.Fatal(err)
		}
		return c
	}
	sync := func(c *Ctx) chan error {
		ch := make(chan error, 1)
		go func() { ch <- l.Sync(ctx, c) }()
		return ch
	}
	returned := func(chs ...chan error) bool {
		for _, ch := range chs {
			select {
			case err := <-ch:
				ch <- err
				return true
			default:
			}
		}
		return false
	}

	c1 := logOne(1000)
	h := d.HoldNext(memdev.HoldFlush) // the first sync's flush, after its writes
	s1 := sync(c1)
	<-h.Held()
	atHold := d.Seq()

	c2 := logOne(2000)
	s2 := sync(c2)
	deadline := time.Now().Add(waitLimit)
	for d.Seq() == atHold && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if d.Seq() == atHold {
		h.Release()
		t.Fatal("the second sync did not write while the first one's flush was in flight")
	}
	at2 := d.Seq() // one Write records its whole batch at once

	c3 := logOne(3000)
	s3 := sync(c3)
	time.Sleep(50 * time.Millisecond) // time to write, were it allowed to
	if got := d.Seq(); got != at2 {
		t.Errorf("a third sync wrote (device at %d, was %d) while the first was not durable: three syncs undurable", got, at2)
	}
	if returned(s1, s2, s3) {
		t.Error("a sync returned while the first one's flush was held")
	}
	if got := l.LastLogCommit(); got >= c1.Generation() {
		t.Errorf("lastLogCommit %v published before the first sync (%v) was durable", got, c1.Generation())
	}
	h.Release()
	for i, ch := range []chan error{s1, s2, s3} {
		if err := <-ch; err != nil {
			t.Fatalf("sync %d: %v", i+1, err)
		}
	}
	if got := l.LastLogCommit(); got != c3.Generation() {
		t.Fatalf("lastLogCommit %v, want the last sync's %v", got, c3.Generation())
	}
	if st := l.Stats(); st.Syncs != 3 || st.Overlapped < 1 {
		t.Fatalf("stats %+v: want 3 syncs, at least one overlapped", st)
	}
}
