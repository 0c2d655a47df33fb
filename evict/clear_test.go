package evict

import (
	"sync/atomic"
	"testing"
)

func TestCache_Clear_KeepsPinned(t *testing.T) {
	evicted := 0
	c := newCache(t, Options{BudgetBytes: 1 << 30, Shards: 8, OnEvict: func(_ uint64, e Entry) {
		if e.Pinned() {
			t.Error("Clear dropped a pinned entry")
		}
		evicted++
	}})
	var pinned []*node
	for k := range uint64(1000) {
		n := newNode(k, int64(1+k%7), k%10 == 0)
		if n.Pinned() {
			pinned = append(pinned, n)
		}
		c.Add(k<<14, n)
	}
	if left := c.Clear(); left != len(pinned) {
		t.Fatalf("Clear left %d pinned; want %d", left, len(pinned))
	}
	var pinnedSum int64
	for _, n := range pinned {
		pinnedSum += n.bytes
		if got, ok := c.Get(n.id << 14); !ok || got != n {
			t.Fatalf("pinned entry %d gone after Clear", n.id)
		}
	}
	st := c.Stats()
	if c.Len() != len(pinned) || c.Bytes() != pinnedSum || evicted != 900 || st.Evictions != 900 {
		t.Fatalf("Len %d, Bytes %d, OnEvict %d, Stats %+v; want %d entries of %d bytes, 900 evicted",
			c.Len(), c.Bytes(), evicted, st, len(pinned), pinnedSum)
	}
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}

	// The rebuilt rings work: unpin and Clear again empties the cache.
	for _, n := range pinned {
		n.pinned.Store(false)
	}
	c.Add(1, newNode(1, 1, false))
	if left := c.Clear(); left != 0 || c.Len() != 0 || c.Bytes() != 0 {
		t.Fatalf("second Clear: %d pinned left, Len %d, Bytes %d", left, c.Len(), c.Bytes())
	}
}

// TestCache_Clear_ResetsFloor: after Clear only pinned entries are left, and
// the budget applies from the next Add on.
func TestCache_Clear_ResetsFloor(t *testing.T) {
	c := newCache(t, Options{BudgetBytes: 10, Shards: 1})
	for k := range uint64(30) {
		c.Add(k, newNode(k, 1, k < 15))
	}
	c.Clear()
	if st := c.Stats(); st.PinnedFloorBytes != 0 || st.Entries != 15 {
		t.Fatalf("Stats after Clear %+v; want floor 0, the 15 pinned entries", st)
	}
}

// pinCounter is an entry that counts the calls of its Pinned.
type pinCounter struct{ calls *atomic.Int64 }

func (p pinCounter) CacheBytes() int64 { return 3 }
func (p pinCounter) Pinned() bool      { p.calls.Add(1); return false }

// TestCache_Clear_NeverPinnedDropsWhole: a NeverPinned cache's Clear drops
// every entry, with exact totals, across a shared budget, without looking
// at a single one (no Pinned call): O(shards), whatever the entries.
func TestCache_Clear_NeverPinnedDropsWhole(t *testing.T) {
	b := NewBudget(1 << 20)
	c := New[pinCounter](Options{Budget: b, NeverPinned: true, Shards: 4})
	other := newCache(t, Options{Budget: b})
	other.Add(1, newNode(1, 7, false))
	var calls atomic.Int64
	for k := range uint64(1000) {
		c.Add(k, pinCounter{&calls})
	}
	before := calls.Load()
	if pinned := c.Clear(); pinned != 0 || c.Len() != 0 || c.Bytes() != 0 {
		t.Fatalf("Clear: %d pinned, %d entries, %d bytes left", pinned, c.Len(), c.Bytes())
	}
	if got := calls.Load() - before; got != 0 {
		t.Fatalf("Clear called Pinned %d times: it walked the entries", got)
	}
	if b.Bytes() != 7 || other.Len() != 1 {
		t.Fatalf("budget %d bytes after Clear, want the other cache's 7", b.Bytes())
	}
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Evictions != 1000 {
		t.Fatalf("evictions %d, want 1000", st.Evictions)
	}
}
