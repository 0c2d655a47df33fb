package evict

import (
	"errors"
	"runtime"
	"testing"
	"unsafe"
)

func TestCache_Get_HitAndMiss(t *testing.T) {
	c := newCache(t, Options{BudgetBytes: 1 << 20})
	n := newNode(1, 10, false)
	c.Add(16384, n)
	if got, ok := c.Get(16384); !ok || got != n {
		t.Fatalf("Get(16384) = %v, %v; want the added node", got, ok)
	}
	if got, ok := c.Get(32768); ok || got != nil {
		t.Fatalf("Get(32768) = %v, %v; want a miss", got, ok)
	}
	st := c.Stats()
	if st.Hits != 1 || st.Misses != 1 || st.Entries != 1 || st.Bytes != 10 {
		t.Fatalf("Stats = %+v; want 1 hit, 1 miss, 1 entry of 10 bytes", st)
	}
}

func TestCache_Add_Replace(t *testing.T) {
	c := newCache(t, Options{BudgetBytes: 1 << 20})
	a, b := newNode(1, 10, false), newNode(2, 25, false)
	c.Add(7, a)
	c.Add(7, b)
	if got, _ := c.Get(7); got != b {
		t.Fatalf("Get after replace = node %d; want node 2", got.id)
	}
	if c.Len() != 1 || c.Bytes() != 25 {
		t.Fatalf("Len, Bytes = %d, %d; want 1, 25 (re-charged)", c.Len(), c.Bytes())
	}
}

func TestCache_Remove_PresentAndMissing(t *testing.T) {
	evicted := 0
	c := newCache(t, Options{BudgetBytes: 1 << 20, OnEvict: func(uint64, Entry) { evicted++ }})
	n := newNode(1, 10, true)
	c.Add(1, n)
	c.Add(2, newNode(2, 5, false))
	if got, ok := c.Remove(1); !ok || got != n {
		t.Fatalf("Remove(1) = %v, %v; want the pinned node: Remove takes pinned entries too", got, ok)
	}
	if _, ok := c.Remove(1); ok {
		t.Fatal("second Remove(1) found something")
	}
	if _, ok := c.Get(1); ok {
		t.Fatal("Get after Remove hit")
	}
	if c.Len() != 1 || c.Bytes() != 5 || evicted != 0 {
		t.Fatalf("Len, Bytes, OnEvict calls = %d, %d, %d; want 1, 5, 0", c.Len(), c.Bytes(), evicted)
	}
}

func TestCache_Range_AllAndStop(t *testing.T) {
	c := newCache(t, Options{BudgetBytes: 1 << 20, Shards: 8})
	for k := range uint64(100) {
		c.Add(k<<14, newNode(k, 1, false))
	}
	got := keys(c)
	if len(got) != 100 {
		t.Fatalf("Range saw %d keys; want 100", len(got))
	}
	for k := range uint64(100) {
		if !got[k<<14] {
			t.Fatalf("Range missed key %d", k<<14)
		}
	}
	calls := 0
	c.Range(func(uint64, *node) bool { calls++; return calls < 3 })
	if calls != 3 {
		t.Fatalf("Range went on after false: %d calls", calls)
	}
}

// TestCache_Range_CallsBack: fn runs with no lock held, so it may change
// the cache (Invariant 6).
func TestCache_Range_CallsBack(t *testing.T) {
	c := newCache(t, Options{BudgetBytes: 1 << 20, Shards: 1})
	for k := range uint64(10) {
		c.Add(k, newNode(k, 1, false))
	}
	c.Range(func(key uint64, _ *node) bool {
		c.Remove(key)
		c.Add(key+1000, newNode(key, 1, false))
		return true
	})
	if c.Len() != 10 {
		t.Fatalf("Len = %d; want 10", c.Len())
	}
}

func TestOptions_Validate_Cases(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		ok   bool
	}{
		{Options{BudgetBytes: 1}, true},
		{Options{BudgetBytes: 1, Shards: 1}, true},
		{Options{BudgetBytes: 1, Shards: 256}, true},
		{Options{BudgetBytes: 0}, false},
		{Options{BudgetBytes: -1}, false},
		{Options{BudgetBytes: 1, Shards: 3}, false},
		{Options{BudgetBytes: 1, Shards: 512}, false},
		{Options{BudgetBytes: 1, Shards: -4}, false},
	} {
		err := tc.opts.Validate()
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrOptions)) {
			t.Errorf("Validate(%+v) = %v; want ok %v", tc.opts, err, tc.ok)
		}
	}
}

func TestNew_BadOptionsPanics(t *testing.T) {
	defer func() {
		err, _ := recover().(error)
		if !errors.Is(err, ErrOptions) {
			t.Fatalf("recovered %v; want an ErrOptions panic", err)
		}
	}()
	New[*node](Options{})
}

func TestOptions_ShardCount_Default(t *testing.T) {
	n := Options{BudgetBytes: 1}.shardCount()
	want := shardsPerProc * runtime.GOMAXPROCS(0)
	ok := n&(n-1) == 0 && n >= want && n < 2*want
	if want >= shardsMax {
		ok = n == shardsMax
	}
	if !ok {
		t.Fatalf("default shards = %d; want the power of two at or above %d, at most %d", n, want, shardsMax)
	}
	if got := len(New[*node](Options{BudgetBytes: 1}).shards); got != n {
		t.Fatalf("New made %d shards; want %d", got, n)
	}
}

// TestCache_Check_CatchesBreak proves Check can fail.
func TestCache_Check_CatchesBreak(t *testing.T) {
	c := New[*node](Options{BudgetBytes: 1 << 20, Shards: 1})
	for k := range uint64(10) {
		c.Add(k, newNode(k, 3, false))
	}
	if err := c.Check(); err != nil {
		t.Fatalf("Check of a sound cache: %v", err)
	}
	c.totals.bytes.Add(1)
	if err := c.Check(); !errors.Is(err, ErrCheck) {
		t.Fatalf("Check with a wrong total = %v; want ErrCheck", err)
	}
	c.totals.bytes.Add(-1)
	s := &c.shards[0]
	s.hand.next.next.prev = s.hand // a broken ring
	if err := c.Check(); !errors.Is(err, ErrCheck) {
		t.Fatalf("Check with a broken ring = %v; want ErrCheck", err)
	}
}

// TestShard_Size: a shard is a whole number of cache lines, so that in the
// shards slice (64-byte aligned by the allocator's size classes) each one's
// first line — lock, counters, map — is its own.
func TestShard_Size(t *testing.T) {
	if size := unsafe.Sizeof(shard[*node]{}); size%64 != 0 {
		t.Fatalf("shard is %d bytes, not a multiple of 64: adjust its padding", size)
	}
	if off := unsafe.Offsetof(shard[*node]{}.bytes); off >= 64 {
		t.Fatalf("a hit's fields end at offset %d, past the first cache line", off)
	}
}
