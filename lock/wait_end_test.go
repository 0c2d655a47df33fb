package lock

import (
	"sync"
	"testing"
	"time"

	"ustore/trace"
)

// endLog records the ends markerHook sees and, for each, whether the lock
// was free at that moment (a TryLock succeeded), on top of a markerLog.
type endLog struct {
	*markerLog
	mu        sync.Mutex
	ends      []markerCall
	freeAtEnd []bool
}

// watchEnds installs an endLog on m; like watchMarkers, before any
// goroutine uses a lock.
func watchEnds(t *testing.T, m *Mutex) *endLog {
	t.Helper()
	l := &endLog{markerLog: &markerLog{}}
	markerHook = func(c markerCall) {
		l.markerLog.mu.Lock()
		l.markerLog.calls = append(l.markerLog.calls, c)
		l.markerLog.mu.Unlock()
		if c.begin {
			return
		}
		free := m.mu.TryLock()
		if free {
			m.mu.Unlock()
		}
		l.mu.Lock()
		l.ends = append(l.ends, c)
		l.freeAtEnd = append(l.freeAtEnd, free)
		l.mu.Unlock()
	}
	t.Cleanup(func() { markerHook = nil })
	return l
}

func (l *endLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ends)
}

// slowFlushes makes the flush timer wait an hour, so that only the test's
// FlushWaitEnds calls and undos report ends, until the test ends.
func slowFlushes(t *testing.T) {
	deferred.mu.Lock()
	deferred.delay = time.Hour
	deferred.mu.Unlock()
	t.Cleanup(func() {
		deferred.mu.Lock()
		deferred.delay = DeferredEndsDelay
		deferred.mu.Unlock()
	})
}

// contend makes one waiter wait on m while the test holds it, and returns
// once the waiter has the lock, with the waiter still holding it; release
// lets it unlock, and waits until it has.
func contend(t *testing.T, m *Mutex, log *markerLog) (release func()) {
	t.Helper()
	m.Lock()
	// Count the begins before the waiter starts: read after, they may
	// already include its own, and the wait below would be for one that
	// never comes.
	begins := log.begins()
	got, unlock, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		m.Lock()
		close(got)
		<-unlock
		m.Unlock()
		close(done)
	}()
	log.awaitBegins(t, begins+1)
	m.Unlock()
	<-got
	return func() { close(unlock); <-done }
}

// TestDeferWaitEnds_EndAfterRelease proves Invariant 5: with deferral on,
// a wait's end reaches the marker only after the lock is released — never
// while the waiter holds it — carrying the time the lock was got; without
// deferral it is reported while the waiter holds the lock.
func TestDeferWaitEnds_EndAfterRelease(t *testing.T) {
	var m Mutex
	m.Init(NewClass("deferred", 9), 4242)
	log := watchEnds(t, &m)
	slowFlushes(t)

	// Not deferred: the end is reported inside the critical section.
	release := contend(t, &m, log.markerLog)
	if n := log.count(); n != 1 || log.freeAtEnd[0] {
		t.Fatalf("undeferred: %d ends seen, free at end %v; want 1 seen while held", n, log.freeAtEnd)
	}
	release()

	undo := DeferWaitEnds()
	defer undo()
	before := trace.Nanotime()
	release = contend(t, &m, log.markerLog)
	got := trace.Nanotime()
	if n := log.count(); n != 1 {
		t.Fatalf("deferred: an end was reported while the waiter held the lock (%d ends)", n)
	}
	release()
	if n := log.count(); n != 1 {
		t.Fatalf("deferred: an end was reported before a flush (%d ends)", n)
	}
	FlushWaitEnds()
	if n := log.count(); n != 2 {
		t.Fatalf("after the flush: %d ends, want 2", n)
	}
	end := log.ends[1]
	if !log.freeAtEnd[1] {
		t.Fatal("the deferred end was reported while the lock was held")
	}
	if end.end < before || end.end > got {
		t.Fatalf("end time %d outside [%d, %d]: not when the lock was got", end.end, before, got)
	}
	if n := log.check(t, nil); n != 2 {
		t.Fatalf("markers saw %d waits, want 2", n)
	}
}

// TestDeferWaitEnds_TimerFlushes: without any FlushWaitEnds call, a
// deferred end is reported by the flush timer, DeferredEndsDelay later.
func TestDeferWaitEnds_TimerFlushes(t *testing.T) {
	var m Mutex
	m.Init(nil, 1)
	log := watchEnds(t, &m)
	undo := DeferWaitEnds()
	defer undo()
	release := contend(t, &m, log.markerLog)
	release()
	deadline := time.Now().Add(5 * time.Second)
	for log.count() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no flush reported the deferred end within 5 s")
		}
		time.Sleep(time.Millisecond)
	}
	if !log.freeAtEnd[0] {
		t.Fatal("the timer's flush reported the end while the lock was held")
	}
}

// TestDeferWaitEnds_FullBufferReportsAtOnce: the buffer holds
// maxDeferredEnds ends; the next is reported at once, nothing is lost.
func TestDeferWaitEnds_FullBufferReportsAtOnce(t *testing.T) {
	var m Mutex
	log := watchEnds(t, &m)
	slowFlushes(t)
	undo := DeferWaitEnds()
	for i := range maxDeferredEnds + 1 {
		endWait(trace.WaitEnd{ID: 1, Token: uint64(i + 1), End: int64(i)})
	}
	if n := log.count(); n != 1 || log.ends[0].token != maxDeferredEnds+1 {
		t.Fatalf("with the buffer full: %d ends reported (%+v), want the one that did not fit", n, log.ends)
	}
	undo()
	if n := log.count(); n != maxDeferredEnds+1 {
		t.Fatalf("after undo: %d ends reported, want %d", n, maxDeferredEnds+1)
	}
	for i, e := range log.ends[1:] {
		if e.token != uint64(i+1) {
			t.Fatalf("end %d has token %d: not in the order buffered", i, e.token)
		}
	}
}

// TestDeferWaitEnds_Nests: deferral stays on until the last undo; each undo
// flushes; afterwards ends are reported at once again, and a second call of
// an undo does nothing.
func TestDeferWaitEnds_Nests(t *testing.T) {
	var m Mutex
	log := watchEnds(t, &m)
	slowFlushes(t)
	undo1, undo2 := DeferWaitEnds(), DeferWaitEnds()
	reported := func(want int, what string) {
		t.Helper()
		if n := log.count(); n != want {
			t.Fatalf("%s: %d ends reported, want %d", what, n, want)
		}
	}
	endWait(trace.WaitEnd{ID: 1, Token: 1})
	undo1()
	undo1()
	reported(1, "the first undo flushes")
	endWait(trace.WaitEnd{ID: 1, Token: 2})
	reported(1, "with one DeferWaitEnds still on an end is deferred")
	undo2()
	reported(2, "the last undo flushes")
	endWait(trace.WaitEnd{ID: 1, Token: 3})
	reported(3, "after the last undo an end is reported at once")
}

// TestEndWait_NoAllocs: reporting an end, deferred or not, allocates
// nothing once the buffers exist.
func TestEndWait_NoAllocs(t *testing.T) {
	slowFlushes(t)
	if a := testing.AllocsPerRun(100, func() { endWait(trace.WaitEnd{ID: 1, Token: 1}) }); a != 0 {
		t.Fatalf("undeferred endWait allocated %v times, want 0", a)
	}
	undo := DeferWaitEnds()
	defer undo()
	if a := testing.AllocsPerRun(100, func() { endWait(trace.WaitEnd{ID: 1, Token: 1}) }); a != 0 {
		t.Fatalf("deferred endWait allocated %v times, want 0", a)
	}
}
