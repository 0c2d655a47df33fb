package journal

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Committed must not take the journal's lock (the jbd2 lesson): it answers
// while another goroutine holds mu.
func TestJournal_Committed_TakesNoLock(t *testing.T) {
	j, _ := openTest(t, Options{FirstTransid: 10})
	j.mu.Lock()
	answers := make(chan [2]bool, 1)
	go func() { answers <- [2]bool{j.Committed(9), j.Committed(10)} }()
	select {
	case got := <-answers:
		if got != [2]bool{true, false} {
			t.Errorf("Committed(9), Committed(10) = %v, want true, false", got)
		}
	case <-time.After(testTimeout):
		t.Error("Committed blocked on the journal's mutex")
	}
	j.mu.Unlock()
}

func TestJournal_Committed_NoAllocs(t *testing.T) {
	j, _ := openTest(t, Options{})
	if n := testing.AllocsPerRun(1000, func() { _ = j.Committed(7) }); n != 0 {
		t.Fatalf("Committed allocates %v times per call", n)
	}
}

func TestJournal_WaitCommitted_FutureID(t *testing.T) {
	j, _ := openTest(t, Options{})
	done := make(chan error, 1)
	go func() { done <- j.WaitCommitted(testContext(t), 3) }()
	for want := Transid(1); want <= 3; want++ {
		select {
		case err := <-done:
			t.Fatalf("WaitCommitted(3) returned %v with commitSeq %d", err, j.commitSeq.Load())
		default:
		}
		if want == 3 && j.State(3) != TransUnknown {
			t.Fatalf("State(3) %v before its Start, want unknown", j.State(3))
		}
		h := mustStart(t, j)
		if h.Transid() != want {
			t.Fatalf("transid %d, want %d", h.Transid(), want)
		}
		h.End()
		if _, err := j.CommitNow(testContext(t)); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("WaitCommitted(3): %v", err)
	}
}

func TestJournal_WaitCommitted_ContextDone(t *testing.T) {
	j, _ := openTest(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if err := j.WaitCommitted(ctx, 5); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitCommitted(5) on an idle journal: %v, want DeadlineExceeded", err)
	}
	// An id already committed needs no wait, even with ctx done.
	if err := j.WaitCommitted(ctx, 0); err != nil {
		t.Fatalf("WaitCommitted(0): %v", err)
	}
}

// BenchmarkJournal_Committed measures fsync's question "is T committed?".
func BenchmarkJournal_Committed(b *testing.B) {
	j, _ := openTest(b, Options{FirstTransid: 100})
	b.ReportAllocs()
	n := 0
	for i := 0; b.Loop(); i++ {
		if j.Committed(Transid(i & 127)) {
			n++
		}
	}
	if n == 0 {
		b.Fatal("nothing committed")
	}
}

// BenchmarkJournal_CommittedParallel asks from every P at once, as
// concurrent fsyncs do: a load of a shared word scales where a lock would
// not.
func BenchmarkJournal_CommittedParallel(b *testing.B) {
	j, _ := openTest(b, Options{FirstTransid: 100})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			_ = j.Committed(Transid(i & 127))
			i++
		}
	})
}
