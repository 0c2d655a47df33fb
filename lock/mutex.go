package lock

import "sync"

// Mutex is a mutual exclusion lock whose contended acquisitions are marked
// for eBPF and recorded in a Class. The zero value is an unlocked, anonymous
// lock (id 0, no class); Init names it. Like sync.Mutex it must not be copied
// after first use.
type Mutex struct {
	mu    sync.Mutex
	class *Class // may be nil: no accounting
	id    uint64 // the lock instance for eBPF; see the package doc
}

// Init sets the lock's class (nil for none) and id. Call it before the lock
// is shared, never while it is held or awaited.
func (m *Mutex) Init(class *Class, id uint64) {
	m.class, m.id = class, id
}

// Lock locks m. When m is free it costs a TryLock and nothing more;
// otherwise it marks and records the wait.
func (m *Mutex) Lock() {
	if !m.mu.TryLock() {
		m.lockSlow()
	}
}

// TryLock tries to lock m and reports whether it did. It never waits, so it
// never marks or records anything.
func (m *Mutex) TryLock() bool { return m.mu.TryLock() }

// Unlock unlocks m.
func (m *Mutex) Unlock() { m.mu.Unlock() }

// lockSlow stays out of line so that the fast path's frame holds neither the
// method value nor waitFor's clock readings: Lock is a try, a branch and a
// return.
//
//go:noinline
func (m *Mutex) lockSlow() { waitFor(m.id, m.class, true, m.mu.Lock) }
