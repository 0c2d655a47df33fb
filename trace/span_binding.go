package trace

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// Span binding lets a lock wait name the request it delays without
// threading a context through every lock call. While binding is on (the
// eBPF loader turns it on), a request's goroutine binds its span (Bind); a
// contended lock asks CurrentSpanKey for the key of the span bound to the
// calling goroutine and hands it to LockWaitBegin; BPF returns it with the
// long wait, and AddLockWait finds the span by that key to add the event.
//
// The goroutine is named by its g pointer (goroutineKey): a goroutine keeps
// it when it changes threads, and the runtime reuses it only after the
// goroutine exited, by which time its binding was undone.

// bindingOn gates everything: off, Bind and CurrentSpanKey cost one load.
var bindingOn atomic.Bool

// bound maps goroutineKey → span key of the span bound to that goroutine.
var bound sync.Map

// spans maps span key → *boundSpan, for AddLockWait: the bound spans, and
// for a while after they ended, so that an event read late still finds
// its request (as a child span then).
var spans sync.Map

// spanCount is the number of entries in spans, kept under spansMax.
var spanCount atomic.Int64

// spansMax bounds spans: past it, Bind binds nothing (the waits of those
// requests go unattributed, never unbounded memory). A server's in-flight
// requests are far fewer.
const spansMax = 1 << 16

// spanKeep is how long an ended span stays findable. The ring buffer is
// read within milliseconds; seconds leave room for a stalled reader.
const spanKeep = 10 * time.Second

type boundSpan struct {
	s     oteltrace.Span
	ended atomic.Int64 // unix ns when Unbind ran; 0 while bound
}

// SetSpanBinding turns span binding on or off and returns a function that
// restores the previous state. While on, a sweeper forgets ended spans
// after spanKeep.
//
// restore returns once the sweeper has forgotten every span: were it to
// finish later, it could drop the spans a binding turned on again after
// restore had bound meanwhile.
func SetSpanBinding(on bool) (restore func()) {
	was := bindingOn.Swap(on)
	stop, done := make(chan struct{}), make(chan struct{})
	if on && !was {
		go sweepSpans(stop, done)
	}
	return func() {
		bindingOn.Store(was)
		if on && !was {
			close(stop)
			<-done
		}
	}
}

func sweepSpans(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			spans.Range(func(k, _ any) bool {
				spans.Delete(k)
				spanCount.Add(-1)
				return true
			})
			return
		case now := <-t.C:
			forgetEnded(now.Add(-spanKeep))
		}
	}
}

// forgetEnded drops the spans that ended before cutoff.
func forgetEnded(cutoff time.Time) {
	spans.Range(func(k, v any) bool {
		if e := v.(*boundSpan).ended.Load(); e != 0 && e < cutoff.UnixNano() {
			if _, ok := spans.LoadAndDelete(k); ok {
				spanCount.Add(-1)
			}
		}
		return true
	})
}

// Binding is what Bind returns: Unbind it when the request ends.
type Binding struct {
	g   uintptr
	key uint64
	e   *boundSpan
}

// Bind binds s to the calling goroutine until Unbind, so that the lock
// waits of this goroutine carry s's key. It does nothing (and costs one
// atomic load) while binding is off or s is the zero Span.
func (s Span) Bind() Binding {
	if !bindingOn.Load() || s.s == nil {
		return Binding{}
	}
	g := goroutineKey()
	key := s.Key()
	if g == 0 || key == 0 || spanCount.Load() >= spansMax {
		return Binding{}
	}
	e := &boundSpan{s: s.s}
	if v, loaded := spans.LoadOrStore(key, e); loaded {
		// Bound before and unbound (the server's reader tried a request
		// and handed it on): live again until this binding's Unbind.
		// The sweeper forgets only spans ended spanKeep ago, far longer
		// than a request is handed on in.
		e = v.(*boundSpan)
		e.ended.Store(0)
	} else {
		spanCount.Add(1)
	}
	bound.Store(g, key)
	return Binding{g: g, key: key, e: e}
}

// Unbind undoes Bind. Call it from the goroutine that bound.
func (b Binding) Unbind() {
	if b.e == nil {
		return
	}
	bound.CompareAndDelete(b.g, b.key)
	b.e.ended.Store(time.Now().UnixNano())
}

// CurrentSpanKey returns the key of the span bound to the calling
// goroutine, 0 for none. Package lock calls it on its slow path only.
func CurrentSpanKey() uint64 {
	if !bindingOn.Load() {
		return 0
	}
	if v, ok := bound.Load(goroutineKey()); ok {
		return v.(uint64)
	}
	return 0
}

// What AddLockWait did with a wait.
const (
	LockWaitNoSpan    = iota // no span known by that key: counted only
	LockWaitSpanEvent        // a "lock.wait" event on the live span
	LockWaitChildSpan        // the span had ended: a "lock.wait" child span
)

// AddLockWait records a lock wait that began at start and lasted wait on
// the span whose key is key: a "lock.wait" event at the wait's end while
// the span records, else a child span "lock.wait" from start to its end
// (an event added after End would be dropped). It reports which, and the
// trace's ID (hex, as Jaeger shows it) when it found the span.
func AddLockWait(key uint64, start time.Time, wait time.Duration, attrs ...attribute.KeyValue) (outcome int, traceID string) {
	if key == 0 {
		return LockWaitNoSpan, ""
	}
	v, ok := spans.Load(key)
	if !ok {
		return LockWaitNoSpan, ""
	}
	e := v.(*boundSpan)
	end := start.Add(wait)
	traceID = e.s.SpanContext().TraceID().String()
	if e.ended.Load() == 0 && e.s.IsRecording() {
		e.s.AddEvent("lock.wait", oteltrace.WithTimestamp(end), oteltrace.WithAttributes(attrs...))
		return LockWaitSpanEvent, traceID
	}
	box := tracer.Load()
	if box == nil {
		return LockWaitNoSpan, ""
	}
	ctx := oteltrace.ContextWithSpanContext(context.Background(), e.s.SpanContext())
	_, child := box.t.Start(ctx, "lock.wait", oteltrace.WithTimestamp(start), oteltrace.WithAttributes(attrs...))
	child.End(oteltrace.WithTimestamp(end))
	return LockWaitChildSpan, traceID
}
