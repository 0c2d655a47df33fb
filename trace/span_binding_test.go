package trace

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// TestGoroutineKey_PerGoroutine: the key is the same for one goroutine
// whatever thread runs it, and differs between live goroutines.
func TestGoroutineKey_PerGoroutine(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("goroutineKey is amd64 only (0 elsewhere, binding off)")
	}
	k := goroutineKey()
	if k == 0 {
		t.Fatal("goroutineKey is 0")
	}
	runtime.LockOSThread()
	runtime.Gosched()
	k2 := goroutineKey()
	runtime.UnlockOSThread()
	if k2 != k {
		t.Fatalf("key moved from %#x to %#x on the same goroutine", k, k2)
	}
	const n = 8
	keys := make([]uintptr, n)
	var ready, hold sync.WaitGroup
	hold.Add(1)
	for i := range n {
		ready.Add(1)
		go func() {
			keys[i] = goroutineKey()
			ready.Done()
			hold.Wait() // alive until every key is taken
		}()
	}
	ready.Wait()
	hold.Done()
	seen := map[uintptr]bool{k: true}
	for _, g := range keys {
		if seen[g] {
			t.Fatalf("two live goroutines share key %#x", g)
		}
		seen[g] = true
	}
}

// TestSpan_Bind_CurrentSpanKey: with binding on, a bound span's key is the
// current key of its goroutine only, until Unbind; with binding off,
// nothing is bound.
func TestSpan_Bind_CurrentSpanKey(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("span binding is amd64 only")
	}
	useRecorder(t)
	_, s := Start(context.Background(), "req")
	defer s.End()
	if b := s.Bind(); b.e != nil || CurrentSpanKey() != 0 {
		t.Fatal("binding off, yet Bind bound")
	}
	defer SetSpanBinding(true)()
	b := s.Bind()
	if got := CurrentSpanKey(); got != s.Key() || got == 0 {
		t.Fatalf("CurrentSpanKey %#x, want the span's %#x", got, s.Key())
	}
	other := make(chan uint64)
	go func() { other <- CurrentSpanKey() }()
	if got := <-other; got != 0 {
		t.Fatalf("another goroutine sees key %#x", got)
	}
	b.Unbind()
	if got := CurrentSpanKey(); got != 0 {
		t.Fatalf("after Unbind, key %#x", got)
	}
}

// TestAddLockWait_LiveThenEnded: a wait on a live bound span becomes a
// lock.wait event with its attributes at the wait's end; once the span
// ended, a lock.wait child span over the wait; an unknown key, nothing.
func TestAddLockWait_LiveThenEnded(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("span binding is amd64 only")
	}
	rec := useRecorder(t)
	defer SetSpanBinding(true)()
	_, s := Start(context.Background(), "ustore.create")
	b := s.Bind()
	start := time.Now()
	attr := attribute.String("ustore.lock.class", "fs.level0")
	if got, tid := AddLockWait(s.Key(), start, 3*time.Millisecond, attr); got != LockWaitSpanEvent || tid != s.TraceID() {
		t.Fatalf("live span: outcome %d trace %q, want span event in %s", got, tid, s.TraceID())
	}
	b.Unbind()
	s.End()
	if got, _ := AddLockWait(s.Key(), start, 2*time.Millisecond, attr); got != LockWaitChildSpan {
		t.Fatalf("ended span: outcome %d, want child span", got)
	}
	if got, _ := AddLockWait(12345, start, time.Millisecond); got != LockWaitNoSpan {
		t.Fatalf("unknown key: outcome %d", got)
	}
	ended := rec.Ended()
	if len(ended) != 2 {
		t.Fatalf("%d spans ended, want the request and one lock.wait", len(ended))
	}
	req, child := ended[0], ended[1]
	if req.Name() != "ustore.create" || len(req.Events()) != 1 {
		t.Fatalf("request span %s with %d events", req.Name(), len(req.Events()))
	}
	ev := req.Events()[0]
	if ev.Name != "lock.wait" || !ev.Time.Equal(start.Add(3*time.Millisecond)) || len(ev.Attributes) != 1 || ev.Attributes[0] != attr {
		t.Fatalf("event %+v", ev)
	}
	if child.Name() != "lock.wait" || child.Parent().SpanID() != req.SpanContext().SpanID() ||
		!child.StartTime().Equal(start) || !child.EndTime().Equal(start.Add(2*time.Millisecond)) {
		t.Fatalf("child %s parent %v [%v, %v]", child.Name(), child.Parent().SpanID(), child.StartTime(), child.EndTime())
	}
}

// TestAddLockWait_BoundAgain: a span bound, unbound and bound again (the
// server's reader tries a request, then a worker serves it) is live again:
// a wait reported after the second Bind is an event on it, not a child
// span as for an ended one.
func TestAddLockWait_BoundAgain(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("span binding is amd64 only")
	}
	useRecorder(t)
	defer SetSpanBinding(true)()
	_, s := Start(context.Background(), "ustore.create")
	defer s.End()
	s.Bind().Unbind()
	b := s.Bind()
	defer b.Unbind()
	if got := CurrentSpanKey(); got != s.Key() {
		t.Fatalf("CurrentSpanKey %#x after the second Bind, want %#x", got, s.Key())
	}
	if got, _ := AddLockWait(s.Key(), time.Now(), time.Millisecond); got != LockWaitSpanEvent {
		t.Fatalf("bound again: outcome %d, want a span event", got)
	}
}

// TestSetSpanBinding_RestoreForgetsAtOnce: when restore returns, the
// sweeper has forgotten every span, so it cannot drop, later, a span bound
// after binding was turned on again (the cause of
// TestAddLockWait_LiveThenEnded's rare "ended span: outcome 0").
func TestSetSpanBinding_RestoreForgetsAtOnce(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("span binding is amd64 only")
	}
	useRecorder(t)
	for i := range 200 {
		restore := SetSpanBinding(true)
		_, s := Start(context.Background(), "ustore.stat")
		b := s.Bind()
		b.Unbind()
		s.End()
		restore()
		if n := spanCount.Load(); n != 0 {
			t.Fatalf("round %d: %d spans still known after restore returned", i, n)
		}
		restore = SetSpanBinding(true)
		_, s = Start(context.Background(), "ustore.create")
		b = s.Bind()
		b.Unbind()
		s.End()
		if got, _ := AddLockWait(s.Key(), time.Now(), time.Millisecond); got != LockWaitChildSpan {
			t.Fatalf("round %d: a span bound after binding came back on: outcome %d, want child span", i, got)
		}
		restore()
	}
}
