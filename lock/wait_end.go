package lock

import (
	"sync"
	"sync/atomic"
	"time"

	"ustore/trace"
)

// Why wait ends are deferred. A uprobe hit costs about 1–2 µs. The begin
// marker fires before the waiter blocks, when it is going to wait anyway;
// an end marker fired right after the acquisition would run inside the
// critical section and lengthen it. Under heavy contention that was the
// whole of eBPF's overhead (docs/BENCHMARKS.md, "eBPF overhead"): the
// longer holds piled waiters onto the run queues and kept Go's sysmon
// polling. So while the eBPF loader has the markers attached it turns
// deferral on, and a wait's end — (id, token) and the time the lock was
// got, which BPF subtracts its begin time from — waits in a process-wide
// buffer until a flush, DeferredEndsDelay after the first end buffered,
// reports the buffer in a few LockWaitEnds calls from a goroutine that
// holds no lock. A wait's sample reaches BPF up to that delay late, with
// its true length.
//
// The buffer is bounded (maxDeferredEnds): an end that finds it full is
// reported at once, as without deferral. Nothing is ever dropped.

// DeferredEndsDelay is how long a deferred end waits, at most, for the
// flush that reports it (plus the flushing goroutine's scheduling delay).
const DeferredEndsDelay = 5 * time.Millisecond

// maxDeferredEnds bounds the buffer: 2,048 ends of 24 bytes, 48 KiB (and a
// spare of the same size), several flush delays' worth at the contention
// rates measured (about 20,000 waits a second).
const maxDeferredEnds = 2048

// deferring is on while DeferWaitEnds is: the slow path's one atomic load
// when it is off.
var deferring atomic.Bool

var deferred struct {
	mu    sync.Mutex
	users int             // DeferWaitEnds calls not undone
	ends  []trace.WaitEnd // buffered, in the order the locks were got
	spare []trace.WaitEnd // the other buffer, nil while a flush reports it
	timer *time.Timer     // runs FlushWaitEnds; armed by the first end buffered
	delay time.Duration   // DeferredEndsDelay; tests lengthen it

	flushing sync.Mutex // one flush at a time: it owns the buffer it reports
}

// DeferWaitEnds turns deferral on until the returned undo is called. Calls
// nest: deferral stays on while any is not undone. Each undo flushes, so
// the last leaves no end behind. Undo is idempotent.
func DeferWaitEnds() (undo func()) {
	deferred.mu.Lock()
	if deferred.timer == nil {
		deferred.timer = time.AfterFunc(time.Hour, FlushWaitEnds)
		deferred.timer.Stop()
		deferred.ends = make([]trace.WaitEnd, 0, maxDeferredEnds)
		deferred.spare = make([]trace.WaitEnd, 0, maxDeferredEnds)
		if deferred.delay == 0 {
			deferred.delay = DeferredEndsDelay
		}
	}
	deferred.users++
	deferring.Store(true)
	deferred.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			deferred.mu.Lock()
			deferred.users--
			if deferred.users == 0 {
				deferring.Store(false)
				deferred.timer.Stop()
			}
			deferred.mu.Unlock()
			FlushWaitEnds()
		})
	}
}

// FlushWaitEnds reports every deferred end now. The caller must hold no
// lock of this package's types, or it lengthens that critical section just
// as an undeferred end would. Tests that count BPF's samples call it once
// their waiters have released their locks.
func FlushWaitEnds() {
	deferred.flushing.Lock()
	defer deferred.flushing.Unlock()
	deferred.mu.Lock()
	ends := deferred.ends
	deferred.ends, deferred.spare = deferred.spare, nil
	deferred.mu.Unlock()
	if len(ends) > 0 {
		reportEnds(ends)
	}
	deferred.mu.Lock()
	deferred.spare = ends[:0]
	deferred.mu.Unlock()
}

// endWait hands a wait's end to BPF: to the buffer while deferral is on and
// the buffer has room, else at once.
func endWait(e trace.WaitEnd) {
	if deferring.Load() && deferEnd(e) {
		return
	}
	one := [1]trace.WaitEnd{e}
	reportEnds(one[:])
}

// deferEnd buffers e and reports whether it did.
func deferEnd(e trace.WaitEnd) bool {
	deferred.mu.Lock()
	defer deferred.mu.Unlock()
	if deferred.users == 0 || len(deferred.ends) == maxDeferredEnds {
		return false
	}
	deferred.ends = append(deferred.ends, e)
	if len(deferred.ends) == 1 {
		deferred.timer.Reset(deferred.delay)
	}
	return true
}

// reportEnds calls LockWaitEnds on ends, at most MaxWaitEndsPerMarker at a
// time.
func reportEnds(ends []trace.WaitEnd) {
	if markerHook != nil {
		for _, e := range ends {
			markerHook(markerCall{id: e.ID, token: e.Token, end: e.End})
		}
	}
	for len(ends) > 0 {
		n := min(len(ends), trace.MaxWaitEndsPerMarker)
		trace.LockWaitEnds(&ends[0], n)
		ends = ends[n:]
	}
}
