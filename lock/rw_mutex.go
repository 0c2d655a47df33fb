package lock

import "sync"

// RWMutex is a reader/writer lock whose contended acquisitions are marked for
// eBPF and recorded in a Class. The zero value is an unlocked, anonymous
// lock (id 0, no class); Init names it. Like sync.RWMutex it must not be
// copied after first use, and a blocked Lock keeps new readers out.
type RWMutex struct {
	mu    sync.RWMutex
	class *Class // may be nil: no accounting
	id    uint64 // the lock instance for eBPF; see the package doc
}

// Init sets the lock's class (nil for none) and id. Call it before the lock
// is shared, never while it is held or awaited.
func (m *RWMutex) Init(class *Class, id uint64) {
	m.class, m.id = class, id
}

// Lock locks m for writing. When m is free it costs a TryLock and nothing
// more; otherwise it marks and records the wait.
func (m *RWMutex) Lock() {
	if !m.mu.TryLock() {
		m.lockSlow()
	}
}

// RLock locks m for reading. When no writer holds or awaits m it costs a
// TryRLock and nothing more; otherwise it marks and records the wait.
func (m *RWMutex) RLock() {
	if !m.mu.TryRLock() {
		m.rlockSlow()
	}
}

// TryLock tries to lock m for writing and reports whether it did. It never
// waits, so it never marks or records anything.
func (m *RWMutex) TryLock() bool { return m.mu.TryLock() }

// TryRLock tries to lock m for reading and reports whether it did. It never
// waits, so it never marks or records anything.
func (m *RWMutex) TryRLock() bool { return m.mu.TryRLock() }

// Unlock unlocks m for writing.
func (m *RWMutex) Unlock() { m.mu.Unlock() }

// RUnlock undoes one RLock.
func (m *RWMutex) RUnlock() { m.mu.RUnlock() }

// lockSlow and rlockSlow stay out of line so that the fast path's frame
// holds neither the method value nor waitFor's clock readings: Lock and RLock
// are a try, a branch and a return.
//
//go:noinline
func (m *RWMutex) lockSlow() { waitFor(m.id, m.class, true, m.mu.Lock) }

//go:noinline
func (m *RWMutex) rlockSlow() { waitFor(m.id, m.class, false, m.mu.RLock) }
