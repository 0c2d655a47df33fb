package journal

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestWaitCommitted_AfterCommittedCallback: WaitCommitted and CommitNow
// return only once Options.Committed has returned for the transaction (the
// engine releases pinned blocks and a replayed log's blocks there; an fsck
// right after mount's replay commit once saw them still held), while
// Committed — the durability check — answers true as soon as it is durable.
func TestWaitCommitted_AfterCommittedCallback(t *testing.T) {
	var callbackDone atomic.Bool
	entered := make(chan struct{})
	j, err := Open(Options{
		Commit: func(context.Context, Transid) error { return nil },
		Committed: func(Transid) {
			close(entered)
			time.Sleep(50 * time.Millisecond) // the engine's unpin and log release
			callbackDone.Store(true)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close(context.Background())
	h, err := j.Start()
	if err != nil {
		t.Fatal(err)
	}
	tid := h.Transid()
	h.End()
	go j.CommitNow(context.Background())
	<-entered
	if !j.Committed(tid) {
		t.Fatal("Committed is false while the Committed callback runs: it is durable")
	}
	if err := j.WaitCommitted(context.Background(), tid); err != nil {
		t.Fatal(err)
	}
	if !callbackDone.Load() {
		t.Fatal("WaitCommitted returned before Options.Committed did")
	}
	if _, err := j.CommitNow(context.Background()); err != nil {
		t.Fatal(err)
	}
}
