package evict

import (
	"errors"
	"sync/atomic"
	"testing"
)

// TestCache_TryEvict_DeclinedStays: the hand asks TryEvict about every
// unpinned, unreferenced entry it would drop, never about a pinned one;
// what it declines stays (a pinned skip), what it accepts leaves in the
// same step, and the budget is then met by the others.
func TestCache_TryEvict_DeclinedStays(t *testing.T) {
	var asked atomic.Int64
	keep := map[uint64]bool{0: true, 2: true}
	c := newCache(t, Options{BudgetBytes: 300, Shards: 1, TryEvict: func(key uint64, e Entry) bool {
		asked.Add(1)
		if e.(*node).Pinned() {
			t.Errorf("TryEvict asked about pinned entry %d", key)
		}
		return !keep[key]
	}})
	for k := range uint64(4) {
		c.Add(k, newNode(k, 100, k == 3))
	}
	// 400 bytes over a 300 budget: the hand passes 0 (declined), 1
	// (accepted): 300, within budget.
	if got := keys(c); !got[0] || got[1] || !got[2] || !got[3] {
		t.Fatalf("cached %v, want 0, 2, 3 (1 accepted, 0 declined, 3 pinned)", got)
	}
	if n := asked.Load(); n != 2 {
		t.Fatalf("TryEvict asked %d times, want 2 (entries 0 and 1)", n)
	}
	if st := c.Stats(); st.PinnedSkips != 1 || st.Evictions != 1 {
		t.Fatalf("%+v: want 1 pinned skip (the declined entry), 1 eviction", st)
	}
	// Clear asks too, and keeps what it declines with the pinned ones.
	if kept := c.Clear(); kept != 3 {
		t.Fatalf("Clear kept %d, want 3 (0 and 2 declined, 3 pinned)", kept)
	}
}

// TestCache_TryEvict_ClearKeepsDeclined: Clear keeps the pinned entries
// and those TryEvict declines, and drops the rest.
func TestCache_TryEvict_ClearKeepsDeclined(t *testing.T) {
	c := newCache(t, Options{BudgetBytes: 1 << 20, Shards: 2, TryEvict: func(key uint64, _ Entry) bool { return key%2 == 0 }})
	for k := range uint64(10) {
		c.Add(k, newNode(k, 10, k == 4))
	}
	// Kept: the odd keys (declined) and 4 (pinned).
	if kept := c.Clear(); kept != 6 {
		t.Fatalf("Clear kept %d, want 6", kept)
	}
	got := keys(c)
	for k := range uint64(10) {
		if want := k%2 == 1 || k == 4; got[k] != want {
			t.Errorf("key %d cached %v, want %v", k, got[k], want)
		}
	}
	if c.Bytes() != 60 {
		t.Fatalf("bytes %d, want 60", c.Bytes())
	}
}

// TestCache_DropAll_Whole: DropAll empties a cache of pinned and unpinned
// entries without asking Pinned or TryEvict about any, and takes its
// bytes out of the shared budget only.
func TestCache_DropAll_Whole(t *testing.T) {
	b := NewBudget(1 << 20)
	var calls atomic.Int64
	c := New[pinCounter](Options{Budget: b, Shards: 4, TryEvict: func(uint64, Entry) bool { calls.Add(1); return true }})
	other := newCache(t, Options{Budget: b})
	other.Add(1, newNode(1, 7, false))
	for k := range uint64(1000) {
		c.Add(k, pinCounter{&calls})
	}
	before := calls.Load()
	if n := c.DropAll(); n != 1000 || c.Len() != 0 || c.Bytes() != 0 {
		t.Fatalf("DropAll: %d dropped, %d entries, %d bytes left", n, c.Len(), c.Bytes())
	}
	if got := calls.Load() - before; got != 0 {
		t.Fatalf("DropAll called Pinned or TryEvict %d times: it walked the entries", got)
	}
	if b.Bytes() != 7 || other.Len() != 1 {
		t.Fatalf("budget %d bytes after DropAll, want the other cache's 7", b.Bytes())
	}
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestOptions_Validate_TryEvictNeverPinned: a cache whose TryEvict may
// keep entries cannot promise NeverPinned.
func TestOptions_Validate_TryEvictNeverPinned(t *testing.T) {
	err := Options{BudgetBytes: 1, NeverPinned: true, TryEvict: func(uint64, Entry) bool { return true }}.Validate()
	if !errors.Is(err, ErrOptions) {
		t.Fatalf("Validate: %v, want ErrOptions", err)
	}
}
