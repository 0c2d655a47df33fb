package logtree_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"ustore/dev/memdev"
	"ustore/engine"
	"ustore/logtree"
)

// TestLog_GrowthCommits: a transaction's log is freed only by its commit,
// so the log's size counts toward the dirty-bytes trigger. With a commit
// interval that never fires and fsyncs that change nothing else, a log past
// DirtyBytesMax gets its transaction committed (and freed) instead of
// growing until the device is full.
func TestLog_GrowthCommits(t *testing.T) {
	const dirtyMax = 256 << 10
	d := memdev.New(64 << 20)
	if err := engine.Mkfs(d, engine.MkfsOptions{NodeSize: 4096}); err != nil {
		t.Fatal(err)
	}
	e, err := engine.Mount(d, engine.Options{DirtyBytesMax: dirtyMax, CommitInterval: 5 * time.Minute,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	l := logtree.New(e)
	ctx := context.Background()
	payload := make([]byte, 200)

	// About 3 MiB of log items: a dozen times the limit.
	const syncs, perSync = 500, 30
	for i := range syncs {
		tr, err := e.Start()
		if err != nil {
			t.Fatal(err)
		}
		c, lt, err := l.Join(tr)
		if err != nil {
			t.Fatalf("sync %d: join: %v", i, err)
		}
		w, err := l.Writer(c, lt)
		if err != nil {
			t.Fatal(err)
		}
		keys := make([]engine.Key, perSync)
		payloads := make([][]byte, perSync)
		for j := range keys {
			keys[j] = engine.Key{ObjectID: uint64(1000 + i), Type: 1, Offset: uint64(j)}
			payloads[j] = payload
		}
		if err := w.Insert(keys, payloads); err != nil {
			t.Fatalf("sync %d: insert: %v", i, err)
		}
		if err := l.Sync(ctx, c); err != nil {
			t.Fatalf("sync %d: %v", i, err)
		}
		tr.End()
	}
	// Commits run in the background: give the last one its moment.
	deadline := time.Now().Add(5 * time.Second)
	for e.Stats().Commits < 5 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	st := e.Stats()
	t.Logf("%d log syncs, %d commits", st.LogSyncs, st.Commits)
	// ~3 MiB of items (more in nodes) over a 256 KiB trigger: at least
	// five commits, whatever the exact node fill.
	if st.Commits < 5 {
		t.Fatalf("%d commits for a log a dozen times DirtyBytesMax, want at least 5", st.Commits)
	}
}

// TestLog_ChainGrowthCommits: each log sync holds one more block until its
// transaction commits — the log chain's next record's — so syncs that add
// almost nothing to the log tree still grow the log: its chain counts
// toward DirtyBytesMax as its nodes do, and a long commit interval commits
// when it passes it, instead of holding a block per fsync until then.
func TestLog_ChainGrowthCommits(t *testing.T) {
	const dirtyMax = 256 << 10
	d := memdev.New(64 << 20)
	if err := engine.Mkfs(d, engine.MkfsOptions{NodeSize: 4096}); err != nil {
		t.Fatal(err)
	}
	e, err := engine.Mount(d, engine.Options{DirtyBytesMax: dirtyMax, CommitInterval: 5 * time.Minute,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	l := logtree.New(e)
	ctx := context.Background()
	// 2,000 syncs of one 8-byte item each: 66 KB of items, under 20
	// leaves of 4 KiB — and 2,000 chain blocks, 8 MiB.
	const syncs = 2000
	for i := range syncs {
		tr, err := e.Start()
		if err != nil {
			t.Fatal(err)
		}
		c, lt, err := l.Join(tr)
		if err != nil {
			t.Fatalf("sync %d: join: %v", i, err)
		}
		w, err := l.Writer(c, lt)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Insert([]engine.Key{{ObjectID: uint64(1000 + i), Type: 1}}, [][]byte{make([]byte, 8)}); err != nil {
			t.Fatalf("sync %d: insert: %v", i, err)
		}
		if err := l.Sync(ctx, c); err != nil {
			t.Fatalf("sync %d: %v", i, err)
		}
		tr.End()
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.Stats().Commits < 5 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	st := e.Stats()
	t.Logf("%d log syncs, %d commits", st.LogSyncs, st.Commits)
	// 32 times the limit; commits run in the background while syncs go
	// on, so far fewer than 32 — but several, where without counting the
	// chain there are none.
	if st.Commits < 5 {
		t.Fatalf("%d commits for a log chain of 8 MiB over a %d KiB DirtyBytesMax, want at least 5", st.Commits, dirtyMax>>10)
	}
}
