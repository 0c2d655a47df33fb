package lock

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

func newMutex(c *Class, id uint64) *Mutex {
	m := &Mutex{}
	m.Init(c, id)
	return m
}

// TestMutex_Lock_UncontendedRecordsNothing checks Invariant 1.
func TestMutex_Lock_UncontendedRecordsNothing(t *testing.T) {
	log := watchMarkers(t)
	c := NewClass("log_mutex", 1)
	m := newMutex(c, 1)
	held := 0 // written under m
	for range 1000 {
		m.Lock()
		held++
		m.Unlock()
	}
	if held != 1000 {
		t.Fatalf("held %d times, want 1000", held)
	}
	requireQuiet(t, c)
	if n := log.check(t, nil); n != 0 {
		t.Fatalf("%d marker waits on an uncontended lock", n)
	}
}

// TestMutex_Lock_ContendedRecordsEachWait blocks n goroutines on a held
// mutex and releases it: exactly n waits, each marked once and recorded once.
func TestMutex_Lock_ContendedRecordsEachWait(t *testing.T) {
	const n, id, kind = 8, 1, 0x100
	log := watchMarkers(t)
	c := NewClass("log_mutex", kind)
	m := newMutex(c, id)
	shared := 0

	m.Lock()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			m.Lock()
			shared++
			m.Unlock()
		})
	}
	log.awaitBegins(t, n)
	time.Sleep(holdWait)
	m.Unlock()
	wg.Wait()

	if shared != n {
		t.Fatalf("%d goroutines ran, want %d", shared, n)
	}
	requireWaits(t, c, n, holdWait)
	if got := log.check(t, map[uint64]uint32{id: kind}); got != n {
		t.Fatalf("markers saw %d waits, want %d", got, n)
	}
}

func TestMutex_TryLock_NeverRecords(t *testing.T) {
	log := watchMarkers(t)
	c := NewClass("log_mutex", 1)
	m := newMutex(c, 1)
	if !m.TryLock() {
		t.Fatal("TryLock of a free mutex failed")
	}
	if m.TryLock() {
		t.Fatal("TryLock of a held mutex succeeded")
	}
	m.Unlock()
	requireQuiet(t, c)
	if got := log.check(t, nil); got != 0 {
		t.Fatalf("markers saw %d waits from tries", got)
	}
}

// TestMutex_Lock_StressExcludes: 16 goroutines increment a plain int in two
// steps under the mutex; a lost update or a -race report means broken
// exclusion. Every wait must be accounted for exactly.
func TestMutex_Lock_StressExcludes(t *testing.T) {
	const goroutines, iterations, id, kind = 16, 300, 9, 4
	log := watchMarkers(t)
	c := NewClass("stress", kind)
	m := newMutex(c, id)
	counter := 0
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range iterations {
				m.Lock()
				v := counter
				runtime.Gosched()
				counter = v + 1
				m.Unlock()
			}
		})
	}
	wg.Wait()
	if counter != goroutines*iterations {
		t.Fatalf("counter %d, want %d: lost updates", counter, goroutines*iterations)
	}
	s := c.Snapshot()
	if s.Contended == 0 || s.total() != s.Contended {
		t.Fatalf("Contended %d, histogram total %d: want equal and non-zero", s.Contended, s.total())
	}
	if got := log.check(t, map[uint64]uint32{id: kind}); uint64(got) != s.Contended {
		t.Fatalf("markers saw %d waits, class recorded %d", got, s.Contended)
	}
}
