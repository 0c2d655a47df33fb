package evict

import "testing"

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
