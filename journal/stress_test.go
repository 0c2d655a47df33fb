package journal

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// 64 goroutines start and end handles, add dirty bytes and commit, while the
// interval and dirty triggers fire too. Checked: commitSeq never goes
// backwards; commits arrive in id order, one at a time, with no handle of
// the committing transaction open; after CommitNow returns, the caller's
// transaction is committed.
func TestJournal_Concurrent_StartEndCommit(t *testing.T) {
	const (
		workers    = 64
		iterations = 60
	)
	var (
		openByTid   sync.Map // Transid → *atomic.Int64: handles open, by the test's count
		inCommit    atomic.Int32
		lastCommit  atomic.Uint64
		commitCount atomic.Int64
	)
	open := func(tid Transid) *atomic.Int64 {
		v, _ := openByTid.LoadOrStore(tid, new(atomic.Int64))
		return v.(*atomic.Int64)
	}
	j, _ := openTest(t, Options{
		CommitInterval: 2 * time.Millisecond,
		DirtyBytesMax:  50_000,
		Commit: func(_ context.Context, tid Transid) error {
			if inCommit.Add(1) != 1 {
				t.Errorf("two commits at once (%d)", tid)
			}
			if n := open(tid).Load(); n != 0 {
				t.Errorf("Commit(%d) with %d of its handles open", tid, n)
			}
			if prev := lastCommit.Swap(uint64(tid)); prev+1 != uint64(tid) {
				t.Errorf("Commit(%d) after Commit(%d)", tid, prev)
			}
			commitCount.Add(1)
			inCommit.Add(-1)
			return nil
		},
	})

	stop := make(chan struct{})
	checker := make(chan struct{})
	go func() {
		defer close(checker)
		var seen uint64
		for {
			select {
			case <-stop:
				return
			default:
			}
			seq := j.commitSeq.Load()
			if seq < seen {
				t.Errorf("commitSeq went back from %d to %d", seen, seq)
				return
			}
			seen = seq
			time.Sleep(10 * time.Microsecond)
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 10*testTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range iterations {
				h, err := j.Start()
				if err != nil {
					t.Errorf("Start: %v", err)
					return
				}
				tid := h.Transid()
				// Count the handle before anything can see it end; the
				// commit of tid cannot begin while it is open, so the count
				// is up before Commit(tid) reads it.
				open(tid).Add(1)
				j.AddDirty(int64(100 * (w + 1)))
				open(tid).Add(-1)
				h.End()
				if (w+i)%8 != 0 {
					continue
				}
				committed, err := j.CommitNow(ctx)
				if err != nil {
					t.Errorf("CommitNow: %v", err)
					return
				}
				if tid > committed || !j.Committed(tid) {
					t.Errorf("handle of %d ended, then CommitNow returned %d; Committed(%d) = %v",
						tid, committed, tid, j.Committed(tid))
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	<-checker
	if err := j.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if commitCount.Load() == 0 || uint64(j.commitSeq.Load()) != lastCommit.Load() {
		t.Fatalf("%d commits, commitSeq %d, last Commit %d", commitCount.Load(), j.commitSeq.Load(), lastCommit.Load())
	}
	t.Logf("%d commits for %d handles", commitCount.Load(), workers*iterations)
}
