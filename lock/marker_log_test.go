package lock

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// markerLog records the slow path's marker calls through markerHook, so that
// tests can wait for goroutines to be blocked and check Invariant 2.
type markerLog struct {
	mu    sync.Mutex
	calls []markerCall
}

// watchMarkers installs a markerLog as the hook until the test ends. Call it
// before starting any goroutine that uses a lock.
func watchMarkers(t *testing.T) *markerLog {
	t.Helper()
	log := &markerLog{}
	markerHook = func(c markerCall) {
		log.mu.Lock()
		log.calls = append(log.calls, c)
		log.mu.Unlock()
	}
	t.Cleanup(func() { markerHook = nil })
	return log
}

func (l *markerLog) begins() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.calls {
		if c.begin {
			n++
		}
	}
	return n
}

// awaitBegins returns once n waits have begun: those goroutines have passed
// LockWaitBegin and are about to block, or are blocked, in the sync lock.
func (l *markerLog) awaitBegins(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for l.begins() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d waits began", l.begins(), n)
		}
		runtime.Gosched()
		time.Sleep(20 * time.Microsecond)
	}
}

// check verifies Invariant 2 over everything logged and returns the number of
// waits: every token is new at its begin, is ended exactly once, by an end
// with the same id that comes after its begin; nothing is left open. kind,
// when not nil, is the class kind every begin must carry for its id, write
// bit (KindWrite, the acquisition's mode) aside; see writes for that bit.
func (l *markerLog) check(t *testing.T, kind map[uint64]uint32) int {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	type wait struct {
		id    uint64
		ended bool
	}
	waits := map[uint64]*wait{}
	for i, c := range l.calls {
		if c.token == 0 {
			t.Fatalf("call %d: token 0", i)
		}
		w := waits[c.token]
		switch {
		case c.begin && w != nil:
			t.Fatalf("call %d: token %d began twice", i, c.token)
		case c.begin:
			if want, ok := kind[c.id]; kind != nil && (!ok || c.kind&^KindWrite != want) {
				t.Fatalf("call %d: id %d began with kind %d, want %d (known: %v)", i, c.id, c.kind, want, ok)
			}
			waits[c.token] = &wait{id: c.id}
		case w == nil:
			t.Fatalf("call %d: end of token %d, which never began", i, c.token)
		case w.ended:
			t.Fatalf("call %d: token %d ended twice", i, c.token)
		case w.id != c.id:
			t.Fatalf("call %d: token %d began on id %d, ended on id %d", i, c.token, w.id, c.id)
		default:
			w.ended = true
		}
	}
	for token, w := range waits {
		if !w.ended {
			t.Fatalf("token %d (id %d) began and never ended", token, w.id)
		}
	}
	return len(waits)
}

// writes counts the begins that carry KindWrite: waits of Lock, not RLock.
func (l *markerLog) writes() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.calls {
		if c.begin && c.kind&KindWrite != 0 {
			n++
		}
	}
	return n
}

// total is the number of waits in the histogram.
func (s ClassStats) total() uint64 {
	var n uint64
	for _, b := range s.Buckets {
		n += b
	}
	return n
}

// requireQuiet fails unless c has recorded nothing at all.
func requireQuiet(t *testing.T, c *Class) {
	t.Helper()
	if s := c.Snapshot(); s.Contended != 0 || s.WaitNanos != 0 || s.total() != 0 {
		t.Fatalf("class %s recorded waits: Contended %d, WaitNanos %d, histogram total %d",
			s.Name, s.Contended, s.WaitNanos, s.total())
	}
}

// requireWaits checks a class after n slow-path acquisitions that each waited
// at least minWait: exact counts, and every wait in a bucket at or above
// minWait's (Invariant 3).
func requireWaits(t *testing.T, c *Class, n int, minWait time.Duration) {
	t.Helper()
	s := c.Snapshot()
	if s.Contended != uint64(n) || s.total() != uint64(n) {
		t.Fatalf("Contended %d, histogram total %d; want %d and %d", s.Contended, s.total(), n, n)
	}
	if s.WaitNanos < uint64(n)*uint64(minWait) || (n > 0 && s.WaitNanos == 0) {
		t.Fatalf("WaitNanos %d for %d waits of at least %v", s.WaitNanos, n, minWait)
	}
	low := bucketIndex(uint64(minWait))
	for i, b := range s.Buckets[:low] {
		if b != 0 {
			t.Fatalf("bucket %d holds %d waits, all waits were at least %v (bucket %d)", i, b, minWait, low)
		}
	}
}
