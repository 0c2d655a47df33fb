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

// The CommittedLocked ablation (for benchmarks) changes how Committed
// reads, never what it answers: two journals driven alike agree on every
// id, before and after each commit, and while one is running.
func TestJournal_Committed_LockedSameAnswers(t *testing.T) {
	free, _ := openTest(t, Options{FirstTransid: 5})
	locked, _ := openTest(t, Options{FirstTransid: 5, Ablations: Ablations{CommittedLocked: true}})
	check := func(when string) {
		t.Helper()
		for id := Transid(0); id < 16; id++ {
			if a, b := free.Committed(id), locked.Committed(id); a != b {
				t.Fatalf("%s: Committed(%d) = %v lock-free, %v locked", when, id, a, b)
			}
		}
	}
	check("after open")
	for range 4 {
		hf, hl := mustStart(t, free), mustStart(t, locked)
		check("running")
		hf.End()
		hl.End()
		for _, j := range []*Journal{free, locked} {
			if _, err := j.CommitNow(testContext(t)); err != nil {
				t.Fatal(err)
			}
		}
		check("committed")
	}
	if free.Committed(8) != true || free.Committed(9) != false {
		t.Fatalf("after 4 commits from 5: Committed(8) %v, Committed(9) %v", free.Committed(8), free.Committed(9))
	}
	// WaitCommitted and State, which ask under mu, do not deadlock.
	if err := locked.WaitCommitted(testContext(t), 8); err != nil {
		t.Fatal(err)
	}
	if s := locked.State(8); s != TransCommitted {
		t.Fatalf("State(8) %v", s)
	}
}

// The ablation does take the lock: Committed waits while mu is held.
func TestJournal_Committed_LockedTakesLock(t *testing.T) {
	j, _ := openTest(t, Options{FirstTransid: 10, Ablations: Ablations{CommittedLocked: true}})
	j.mu.Lock()
	answer := make(chan bool, 1)
	go func() { answer <- j.Committed(9) }()
	select {
	case <-answer:
		t.Fatal("Committed answered while mu was held")
	case <-time.After(20 * time.Millisecond):
	}
	j.mu.Unlock()
	if !<-answer {
		t.Fatal("Committed(9) = false after FirstTransid 10")
	}
}
