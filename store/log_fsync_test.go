package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"ustore/dev/memdev"
	"ustore/engine"
	"ustore/logtree"
)

// waitLimit bounds a wait for something that must happen: past it the
// mechanism under test is missing, not slow.
const waitLimit = 30 * time.Second

// queuedRelogs is what queueRelogs saw: the log's and the log tree's
// counters when the first sync stalled (held), once the queued fsyncs had
// all logged (logged), and at the end (done).
type queuedRelogs struct {
	held, logged, done   logtree.Stats
	treeHeld, treeLogged engine.TreeStats
}

// queueRelogs makes n fsyncs log in one log sub-transaction, for certain:
// files f0..fn are each chmod'ed and fsynced once (logged in the running
// transaction); then f0 again, whose log sync is held at its device write;
// then f1..fn together. Each relogs its inode item (same size: in place),
// and nothing else (no data, names already logged), into the
// sub-transaction after f0's, whose sync must wait for f0's. Once all n
// have logged, the device is released.
func queueRelogs(t *testing.T, n int, opts Options) queuedRelogs {
	t.Helper()
	d := newTestDevice(t, 64<<20)
	opts.CommitInterval = 5 * time.Minute
	s := openTest(t, d, opts)
	defer closeCheck(t, s)
	ctx := context.Background()
	inos := make([]Ino, n+1)
	for i := range inos {
		a, err := s.Create(RootIno, fmt.Sprintf("f%03d", i), 0o644)
		if err != nil {
			t.Fatal(err)
		}
		inos[i] = a.Ino
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	mode := uint32(0o600)
	chmodFsync := func(ino Ino) error {
		mode ^= 0o040 // a change the log must carry: the inode item only
		m := mode
		if _, err := s.SetAttr(ino, SetAttr{Mode: &m}); err != nil {
			return err
		}
		return s.Fsync(ctx, ino, false)
	}
	for _, ino := range inos {
		if err := chmodFsync(ino); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.FsyncLogged != uint64(n+1) {
		t.Fatalf("setup: %d of %d fsyncs logged (fallbacks %v)", st.FsyncLogged, n+1, st.FsyncFallbacks)
	}

	var q queuedRelogs
	h := d.HoldNext(memdev.HoldWriteDurable) // the first log sync
	first := make(chan error, 1)
	go func() { first <- chmodFsync(inos[0]) }()
	<-h.Held()
	q.held, q.treeHeld = s.LogStats()
	errs := make(chan error, n)
	deadline := time.Now().Add(waitLimit)
	for i, ino := range inos[1:] {
		m := mode ^ 0o004
		if _, err := s.SetAttr(ino, SetAttr{Mode: &m}); err != nil {
			t.Fatal(err)
		}
		go func() { errs <- s.Fsync(ctx, ino, false) }()
		// One relog at a time: two relogs of one leaf not yet CoW'd would
		// both restart for the parent lock, and the counts the tests
		// check would depend on the scheduler. They still wait together
		// for the held sync, in one batch.
		for {
			st, _ := s.LogStats()
			if st.InPlace-q.held.InPlace >= uint64(i+1) || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	for {
		q.logged, q.treeLogged = s.LogStats()
		if q.logged.InPlace-q.held.InPlace >= uint64(n) || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	h.Release()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	q.done, _ = s.LogStats()
	if got := q.logged.InPlace - q.held.InPlace; got != uint64(n) {
		t.Fatalf("while the first sync was held, %d of %d fsyncs relogged their inode item in place", got, n)
	}
	if st := s.Stats(); st.FsyncLogged != uint64(2*n+2) {
		t.Fatalf("%d fsyncs logged, want %d (fallbacks %v)", st.FsyncLogged, 2*n+2, st.FsyncFallbacks)
	}
	return q
}

// TestLog_GroupCommit_Batch: fsyncs that arrive while a log sync is
// writing join the next sub-transaction together, and the first of them
// to sync commits it for all (btrfs_sync_log's batch). With f0's sync held
// at its device write and 8 fsyncs logged behind it, exactly two log syncs
// complete the 9 contexts: a batch of 8.
func TestLog_GroupCommit_Batch(t *testing.T) {
	const n = 8
	q := queueRelogs(t, n, Options{})
	syncs, ctxs := q.done.Syncs-q.held.Syncs, q.done.Contexts-q.held.Contexts
	t.Logf("%d log syncs for %d contexts", syncs, ctxs)
	if syncs != 2 || ctxs != n+1 {
		t.Fatalf("%d log syncs for %d contexts: want 2 for %d (f0's alone, then one batch of %d)", syncs, ctxs, n+1, n)
	}
}
