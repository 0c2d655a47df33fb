package evict

import (
	"errors"
	"sync"
	"testing"
	"time"
)

const concurrentMisses = 32

// waitForWaiters blocks until key has a load in flight with n waiters.
func waitForWaiters(t *testing.T, c *Cache[*node], key uint64, n int) {
	t.Helper()
	_, s := c.shardOf(key)
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mu.RLock()
		cl := s.loading[key]
		got := -1
		if cl != nil {
			got = cl.waiters
		}
		s.mu.RUnlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("key %d: %d waiters after 5 s; want %d", key, got, n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// missTogether runs concurrentMisses GetOrLoads of key at once, holding the
// first load until all the others wait on it, and returns their results
// and how many times load ran.
func missTogether(t *testing.T, c *Cache[*node], key uint64, result *node, err error) ([]*node, []error, int) {
	t.Helper()
	var (
		mu    sync.Mutex
		calls int
		wg    sync.WaitGroup
	)
	release := make(chan struct{})
	load := func() (*node, error) {
		mu.Lock()
		calls++
		mu.Unlock()
		<-release
		return result, err
	}
	nodes := make([]*node, concurrentMisses)
	errs := make([]error, concurrentMisses)
	for i := range concurrentMisses {
		wg.Go(func() { nodes[i], errs[i] = c.GetOrLoad(key, load) })
	}
	waitForWaiters(t, c, key, concurrentMisses-1)
	close(release)
	wg.Wait()
	return nodes, errs, calls
}

func TestCache_GetOrLoad_OneLoadForConcurrentMisses(t *testing.T) {
	c := newCache(t, Options{BudgetBytes: 1 << 20})
	want := newNode(7, 100, false)
	nodes, errs, calls := missTogether(t, c, 7<<14, want, nil)
	if calls != 1 {
		t.Fatalf("load ran %d times for %d concurrent misses; want 1", calls, concurrentMisses)
	}
	for i := range nodes {
		if nodes[i] != want || errs[i] != nil {
			t.Fatalf("caller %d got %v, %v; want the loaded node", i, nodes[i], errs[i])
		}
	}
	if got, ok := c.Get(7 << 14); !ok || got != want {
		t.Fatal("the loaded node is not cached")
	}
	st := c.Stats()
	if st.Loads != 1 || st.Misses != concurrentMisses || st.Bytes != 100 {
		t.Fatalf("Stats %+v; want 1 load, %d misses, 100 bytes", st, concurrentMisses)
	}
}

func TestCache_GetOrLoad_ErrorNotCached(t *testing.T) {
	c := newCache(t, Options{BudgetBytes: 1 << 20})
	errRead := errors.New("read failed: checksum mismatch")
	_, errs, calls := missTogether(t, c, 9, nil, errRead)
	if calls != 1 {
		t.Fatalf("load ran %d times; want 1", calls)
	}
	for i, err := range errs {
		if !errors.Is(err, errRead) {
			t.Fatalf("caller %d got %v; want the load's error", i, err)
		}
	}
	if c.Len() != 0 {
		t.Fatalf("a failed load cached %d entries", c.Len())
	}
	// The next miss loads again.
	n := newNode(9, 1, false)
	got, err := c.GetOrLoad(9, func() (*node, error) { return n, nil })
	if err != nil || got != n || c.Stats().Loads != 2 {
		t.Fatalf("retry: %v, %v, Loads %d; want the node and a second load", got, err, c.Stats().Loads)
	}
}

func TestCache_GetOrLoad_HitDoesNotLoad(t *testing.T) {
	c := newCache(t, Options{BudgetBytes: 1 << 20})
	n := newNode(1, 1, false)
	c.Add(1, n)
	got, err := c.GetOrLoad(1, func() (*node, error) {
		t.Fatal("load called for a cached key")
		return nil, nil
	})
	if got != n || err != nil || c.Stats().Hits != 1 {
		t.Fatalf("GetOrLoad = %v, %v, Stats %+v", got, err, c.Stats())
	}
}

// TestCache_GetOrLoad_PanicWakesWaiters: a panicking load must not leave
// its waiters hanging, nor cache anything.
func TestCache_GetOrLoad_PanicWakesWaiters(t *testing.T) {
	c := newCache(t, Options{BudgetBytes: 1 << 20})
	release := make(chan struct{})
	recovered := make(chan any, 1)
	go func() {
		defer func() { recovered <- recover() }()
		c.GetOrLoad(5, func() (*node, error) {
			<-release
			panic("disk on fire")
		})
	}()
	waitForWaiters(t, c, 5, 0) // the load is in flight
	waiterErr := make(chan error, 1)
	go func() {
		_, err := c.GetOrLoad(5, func() (*node, error) { return nil, errors.New("second load") })
		waiterErr <- err
	}()
	waitForWaiters(t, c, 5, 1)
	close(release)
	if r := <-recovered; r != "disk on fire" {
		t.Fatalf("the loader's goroutine recovered %v; want the load's panic", r)
	}
	if err := <-waiterErr; !errors.Is(err, ErrLoadPanicked) {
		t.Fatalf("waiter got %v; want ErrLoadPanicked", err)
	}
	_, s := c.shardOf(5)
	if c.Len() != 0 || len(s.loading) != 0 {
		t.Fatalf("after a panicked load: Len %d, %d loads in flight", c.Len(), len(s.loading))
	}
}

// TestCache_GetOrLoad_AddDuringLoadWins: the load runs with no lock held
// (it may use the cache); an entry added meanwhile is what every caller
// gets, so one key never has two live entries.
func TestCache_GetOrLoad_AddDuringLoadWins(t *testing.T) {
	c := newCache(t, Options{BudgetBytes: 1 << 20})
	added := newNode(2, 1, false)
	got, err := c.GetOrLoad(3, func() (*node, error) {
		c.Add(3, added)
		return newNode(1, 1, false), nil
	})
	if err != nil || got != added || c.Len() != 1 {
		t.Fatalf("GetOrLoad = node %v, %v, Len %d; want the added node, alone", got, err, c.Len())
	}
}

// TestCache_GetOrLoad_RemoveDuringLoadNotCached: a Remove during the load
// makes the loaded copy suspect: returned, not cached.
func TestCache_GetOrLoad_RemoveDuringLoadNotCached(t *testing.T) {
	c := newCache(t, Options{BudgetBytes: 1 << 20})
	loaded := newNode(1, 1, false)
	got, err := c.GetOrLoad(3, func() (*node, error) {
		c.Remove(3)
		return loaded, nil
	})
	if err != nil || got != loaded || c.Len() != 0 {
		t.Fatalf("GetOrLoad = %v, %v, Len %d; want the loaded node, not cached", got, err, c.Len())
	}
}

func TestCache_GetOrLoad_EvictsOverBudget(t *testing.T) {
	c := newCache(t, Options{BudgetBytes: 100, Shards: 2})
	for k := range uint64(50) {
		if _, err := c.GetOrLoad(k, func() (*node, error) { return newNode(k, 10, false), nil }); err != nil {
			t.Fatal(err)
		}
		if c.Bytes() > 100 {
			t.Fatalf("after load %d: Bytes %d over budget 100", k, c.Bytes())
		}
	}
	if st := c.Stats(); st.Evictions != 40 {
		t.Fatalf("Stats %+v; want 40 evictions", st)
	}
}
