package server

import (
	"container/list"
	"sync"

	"ustore/internal/assert"
)

// budget bounds the bytes in flight across every connection: the frame
// buffers of the requests read and not yet answered, and the buffers of
// their responses until they are written (Options.InflightBytesMax). A
// connection's reader takes a request's share before it reads the frame
// and waits while the budget is spent: it stops reading its socket, so the
// client's writes block in the kernel — backpressure, as the store's dirty
// budget does for writers. Waiters are served in order (FIFO), so a large
// request is not starved by small ones.
//
// No deadlock: nobody waits for the budget while holding any of it. The
// reader waits either before a request holds anything, or after it has
// given back the request's share (requests that do not keep their frame
// buffer: everything but write and put); the holders (workers, writers)
// give theirs back without needing more. One acquisition is at most a full
// frame buffer and a small one, and the budget is at least two full
// frames (inflightBytesMin), so every acquisition can be met.
//
// Who touches what: everything under mu.
type budget struct {
	bytesMax int64

	mu        sync.Mutex
	used      int64
	highWater int64
	waiters   list.List // of *budgetWaiter, in arrival order

	// burst is the most in flight since the budget was last drained;
	// drained, when not nil, is called (under mu: it must not block) when
	// the bytes in flight fall to 0 after a burst of burstMin or more.
	burst    int64
	burstMin int64
	drained  func()
}

type budgetWaiter struct {
	n     int64
	ready chan struct{} // closed once n is granted
}

func newBudget(bytesMax int64) *budget {
	return &budget{bytesMax: bytesMax}
}

// acquire takes n bytes, waiting while they are not free. It returns false
// (taking nothing) if done is closed first.
func (b *budget) acquire(done <-chan struct{}, n int64) bool {
	assert.That(n > 0 && n <= b.bytesMax, "server: a budget acquisition larger than the budget")
	b.mu.Lock()
	if b.waiters.Len() == 0 && b.used+n <= b.bytesMax {
		b.takeLocked(n)
		b.mu.Unlock()
		return true
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	e := b.waiters.PushBack(w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return true
	case <-done:
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready:
		// Granted while giving up: give it back.
		b.releaseLocked(n)
		return false
	default:
	}
	front := b.waiters.Front() == e
	b.waiters.Remove(e)
	if front {
		// The next waiter may fit where this one did not.
		b.grantLocked()
	}
	return false
}

// release gives n bytes back and wakes the waiters they satisfy.
func (b *budget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.releaseLocked(n)
	b.mu.Unlock()
}

func (b *budget) releaseLocked(n int64) {
	b.used -= n
	assert.That(b.used >= 0, "server: budget released more than it lent")
	b.grantLocked()
	if b.used == 0 && b.burst >= b.burstMin && b.drained != nil {
		b.burst = 0
		b.drained()
	}
}

// grantLocked grants the waiters at the front, in order, while they fit.
func (b *budget) grantLocked() {
	for e := b.waiters.Front(); e != nil; e = b.waiters.Front() {
		w := e.Value.(*budgetWaiter)
		if b.used+w.n > b.bytesMax {
			return
		}
		b.takeLocked(w.n)
		b.waiters.Remove(e)
		close(w.ready)
	}
}

func (b *budget) takeLocked(n int64) {
	b.used += n
	assert.That(b.used <= b.bytesMax, "server: bytes in flight over the budget")
	b.highWater = max(b.highWater, b.used)
	b.burst = max(b.burst, b.used)
}

// BudgetStats are the server's bytes in flight (Server.Budget).
type BudgetStats struct {
	BytesMax  int64 // the budget, Options.InflightBytesMax
	Bytes     int64 // in flight now
	HighWater int64 // the most ever in flight at once
	Waiting   int   // connections waiting for the budget (not reading)
}

func (b *budget) stats() BudgetStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return BudgetStats{BytesMax: b.bytesMax, Bytes: b.used, HighWater: b.highWater, Waiting: b.waiters.Len()}
}
