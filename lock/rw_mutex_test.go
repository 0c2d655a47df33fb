package lock

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// holdWait is how long tests keep a lock after every waiter has begun its
// wait: each recorded wait is then at least this long.
const holdWait = time.Millisecond

func newRWMutex(c *Class, id uint64) *RWMutex {
	m := &RWMutex{}
	m.Init(c, id)
	return m
}

// TestRWMutex_Lock_UncontendedRecordsNothing checks Invariant 1.
func TestRWMutex_Lock_UncontendedRecordsNothing(t *testing.T) {
	log := watchMarkers(t)
	c := NewClass("node", 7)
	m := newRWMutex(c, 4096)
	held := 0 // written under the write lock, read under the read lock
	for range 1000 {
		m.Lock()
		held++
		m.Unlock()
	}
	for range 1000 {
		m.RLock()
		if held != 1000 {
			t.Fatalf("read %d under the read lock, want 1000", held)
		}
		m.RUnlock()
	}
	requireQuiet(t, c)
	if n := log.check(t, nil); n != 0 {
		t.Fatalf("%d marker waits on an uncontended lock", n)
	}
}

// TestRWMutex_Lock_ContendedRecordsEachWait blocks n writers on a held lock
// and releases it: exactly n waits, each marked once and recorded once.
func TestRWMutex_Lock_ContendedRecordsEachWait(t *testing.T) {
	const n, id, kind = 8, 16384, 0x0501
	log := watchMarkers(t)
	c := NewClass("tree5.level1", kind)
	m := newRWMutex(c, id)
	shared := 0 // written by the writers under m only

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
		t.Fatalf("%d writers ran, want %d", shared, n)
	}
	requireWaits(t, c, n, holdWait)
	if got := log.check(t, map[uint64]uint32{id: kind}); got != n {
		t.Fatalf("markers saw %d waits, want %d", got, n)
	}
}

// TestRWMutex_RLock_ReadersDoNotContend: readers all get in while another
// reader holds the lock, through the fast path.
func TestRWMutex_RLock_ReadersDoNotContend(t *testing.T) {
	log := watchMarkers(t)
	c := NewClass("node", 1)
	m := newRWMutex(c, 1)
	m.RLock()
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			m.RLock()
			defer m.RUnlock()
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Error("readers still blocked after 5 s behind the reader we hold")
	}
	m.RUnlock()
	<-done
	requireQuiet(t, c)
	if got := log.check(t, nil); got != 0 {
		t.Fatalf("markers saw %d waits among readers", got)
	}
}

// TestRWMutex_Lock_BlockedByReaders: a writer that finds readers inside waits,
// and that wait is counted.
func TestRWMutex_Lock_BlockedByReaders(t *testing.T) {
	const id, kind = 3, 9
	log := watchMarkers(t)
	c := NewClass("node", kind)
	m := newRWMutex(c, id)
	writes := 0 // written by the writer under m
	m.RLock()
	m.RLock()
	var wg sync.WaitGroup
	wg.Go(func() {
		m.Lock()
		writes++
		m.Unlock()
	})
	log.awaitBegins(t, 1)
	time.Sleep(holdWait)
	m.RUnlock()
	m.RUnlock()
	wg.Wait()
	if writes != 1 {
		t.Fatalf("writer ran %d times", writes)
	}
	requireWaits(t, c, 1, holdWait)
	if got := log.check(t, map[uint64]uint32{id: kind}); got != 1 {
		t.Fatalf("markers saw %d waits, want 1", got)
	}
	if got := log.writes(); got != 1 {
		t.Fatalf("%d of 1 writer's waits marked KindWrite", got)
	}
}

// TestRWMutex_RLock_BlockedByWriter: readers that find a writer inside wait,
// and each wait is counted.
func TestRWMutex_RLock_BlockedByWriter(t *testing.T) {
	const n, id, kind = 4, 5, 2
	log := watchMarkers(t)
	c := NewClass("node", kind)
	m := newRWMutex(c, id)
	var reads atomic.Int64 // bumped by the readers under m
	m.Lock()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			m.RLock()
			reads.Add(1)
			m.RUnlock()
		})
	}
	log.awaitBegins(t, n)
	if reads.Load() != 0 {
		t.Fatal("a reader got in while the writer held the lock")
	}
	time.Sleep(holdWait)
	m.Unlock()
	wg.Wait()
	requireWaits(t, c, n, holdWait)
	if got := log.check(t, map[uint64]uint32{id: kind}); got != n {
		t.Fatalf("markers saw %d waits, want %d", got, n)
	}
	if got := log.writes(); got != 0 {
		t.Fatalf("%d readers' waits marked KindWrite", got)
	}
}

// TestRWMutex_TryLock_NeverRecords: a failed try does not wait, so it is not
// a contended acquisition.
func TestRWMutex_TryLock_NeverRecords(t *testing.T) {
	log := watchMarkers(t)
	c := NewClass("node", 1)
	m := newRWMutex(c, 1)
	if !m.TryLock() {
		t.Fatal("TryLock of a free lock failed")
	}
	if m.TryLock() || m.TryRLock() {
		t.Fatal("a try succeeded on a write-locked lock")
	}
	m.Unlock()
	if !m.TryRLock() {
		t.Fatal("TryRLock of a free lock failed")
	}
	if !m.TryRLock() {
		t.Fatal("TryRLock failed with only a reader inside")
	}
	if m.TryLock() {
		t.Fatal("TryLock succeeded with readers inside")
	}
	m.RUnlock()
	m.RUnlock()
	requireQuiet(t, c)
	if got := log.check(t, nil); got != 0 {
		t.Fatalf("markers saw %d waits from tries", got)
	}
}

// TestRWMutex_Lock_NilClass: with no class the markers still fire, with kind
// 0, and nothing is recorded anywhere.
func TestRWMutex_Lock_NilClass(t *testing.T) {
	const id = 42
	log := watchMarkers(t)
	m := newRWMutex(nil, id)
	var reads atomic.Int64
	m.Lock()
	var wg sync.WaitGroup
	wg.Go(func() {
		m.RLock()
		reads.Add(1)
		m.RUnlock()
	})
	log.awaitBegins(t, 1)
	m.Unlock()
	wg.Wait()
	if reads.Load() != 1 {
		t.Fatalf("reader ran %d times", reads.Load())
	}
	if got := log.check(t, map[uint64]uint32{id: 0}); got != 1 {
		t.Fatalf("markers saw %d waits, want 1", got)
	}
}

// TestRWMutex_LockRLock_StressExcludes runs 16 goroutines mixing readers and
// writers on one lock. Writers update a plain int in two steps with a yield
// between them; readers read it twice. A broken exclusion shows as a lost
// update, a torn read, or a race report under -race (Invariant 4). Every wait
// must also be accounted for exactly (Invariants 2 and 3), with the ends
// reported at once and with them deferred to flushes that run during the
// stress (Invariant 5).
func TestRWMutex_LockRLock_StressExcludes(t *testing.T) {
	t.Run("immediate", func(t *testing.T) { stressExcludes(t, false) })
	t.Run("deferred", func(t *testing.T) { stressExcludes(t, true) })
}

func stressExcludes(t *testing.T, deferEnds bool) {
	const goroutines, iterations, writeEvery = 16, 300, 4
	const id, kind = 77, 3
	log := watchMarkers(t)
	c := NewClass("stress", kind)
	m := newRWMutex(c, id)
	counter := 0 // guarded by m; deliberately not atomic
	var torn, writes atomic.Int64
	undo := func() {}
	if deferEnds {
		undo = DeferWaitEnds()
	}

	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range iterations {
				if (g+i)%writeEvery == 0 {
					m.Lock()
					v := counter
					runtime.Gosched() // let others find the lock taken
					counter = v + 1
					m.Unlock()
					writes.Add(1)
					continue
				}
				m.RLock()
				a := counter
				runtime.Gosched()
				if counter != a {
					torn.Add(1)
				}
				m.RUnlock()
			}
		})
	}
	wg.Wait()
	undo() // flushes what the timer has not

	if torn.Load() != 0 {
		t.Fatalf("%d reads saw a writer inside", torn.Load())
	}
	if int64(counter) != writes.Load() {
		t.Fatalf("counter %d after %d writes: lost updates", counter, writes.Load())
	}
	s := c.Snapshot()
	if s.Contended == 0 {
		t.Fatal("no contention in the stress run: the test exercised only the fast path")
	}
	if s.total() != s.Contended {
		t.Fatalf("histogram total %d != Contended %d", s.total(), s.Contended)
	}
	if got := log.check(t, map[uint64]uint32{id: kind}); uint64(got) != s.Contended {
		t.Fatalf("markers saw %d waits, class recorded %d", got, s.Contended)
	}
	t.Logf("%d acquisitions, %d contended, mean wait %v", goroutines*iterations, s.Contended,
		time.Duration(s.WaitNanos/s.Contended))
}
