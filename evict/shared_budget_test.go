package evict

import (
	"errors"
	"testing"
)

// page is a second Entry type, as the store's data pages are beside the
// engine's nodes: the two caches share one Budget.
type page struct{ bytes int64 }

func (p *page) CacheBytes() int64 { return p.bytes }
func (p *page) Pinned() bool      { return false }

// TestBudget_Add_SharedAccounting fills a shared budget with one kind, then
// the other, and checks after every Add that the budget's total is exactly
// the sum of the entries each cache holds, within the budget, and that the
// second kind's inserts evicted the first kind's unreferenced entries
// while its referenced ones stayed.
func TestBudget_Add_SharedAccounting(t *testing.T) {
	b := NewBudget(10)
	nodes := newCache(t, Options{Budget: b, Shards: 1})
	pages := New[*page](Options{Budget: b, Shards: 1})
	if b.Members() != 2 {
		t.Fatalf("Members = %d, want 2", b.Members())
	}
	exact := func(when string) {
		t.Helper()
		var pageBytes int64
		pages.Range(func(_ uint64, p *page) bool {
			pageBytes += p.bytes
			return true
		})
		if got, want := b.Bytes(), sumBytes(nodes)+pageBytes; got != want {
			t.Fatalf("%s: budget holds %d bytes, the caches' entries %d", when, got, want)
		}
		if got := nodes.Bytes() + pages.Bytes(); got != b.Bytes() {
			t.Fatalf("%s: caches' Bytes %d, budget's %d", when, got, b.Bytes())
		}
		if b.Bytes() > b.BudgetBytes() {
			t.Fatalf("%s: %d bytes over the budget of %d", when, b.Bytes(), b.BudgetBytes())
		}
		if err := nodes.Check(); err != nil {
			t.Fatal(err)
		}
		if err := pages.Check(); err != nil {
			t.Fatal(err)
		}
	}
	for k := range uint64(10) {
		nodes.Add(k, newNode(k, 1, false))
		exact("filling with nodes")
	}
	// Nodes 0, 2, 4, 6, 8 are used again: their reference bits give them
	// a second chance.
	for k := uint64(0); k < 10; k += 2 {
		if _, ok := nodes.Get(k); !ok {
			t.Fatalf("node %d missing", k)
		}
	}
	for k := range uint64(5) {
		pages.Add(k, &page{bytes: 1})
		exact("adding pages")
	}
	// The pass goes round both caches' shards in turn, as one hand over
	// both would: some nodes and some of the new pages went, but never a
	// node that was used again (its bit was set), and the budget is full.
	got := keys(nodes)
	for k := uint64(0); k < 10; k += 2 {
		if !got[k] {
			t.Errorf("referenced node %d evicted before the unreferenced ones", k)
		}
	}
	if len(got) == 10 || pages.Len() == 0 || len(got)+pages.Len() != 10 {
		t.Errorf("after 5 pages: %d nodes and %d pages cached, want some of each, 10 in all", len(got), pages.Len())
	}
	// Both kinds are now unreferenced (the hand cleared the nodes' bits on
	// its first revolution): more pages evict whichever the hands reach,
	// and the total stays exact.
	for k := uint64(5); k < 40; k++ {
		pages.Add(k, &page{bytes: 1})
		exact("adding more pages")
	}
	if nodes.Clear() != 0 {
		t.Fatal("Clear kept entries, none is pinned")
	}
	exact("after Clear")
	if b.Bytes() != pages.Bytes() {
		t.Fatalf("after Clear of the nodes, budget %d, pages %d", b.Bytes(), pages.Bytes())
	}
}

// TestOptions_Validate_SharedBudget: a shared budget takes the place of
// BudgetBytes; both at once is refused.
func TestOptions_Validate_SharedBudget(t *testing.T) {
	b := NewBudget(1)
	if err := (Options{Budget: b}).Validate(); err != nil {
		t.Errorf("Budget alone: %v", err)
	}
	if err := (Options{Budget: b, BudgetBytes: 1}).Validate(); !errors.Is(err, ErrOptions) {
		t.Errorf("Budget and BudgetBytes: %v, want ErrOptions", err)
	}
}
