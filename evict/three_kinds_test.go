package evict

import (
	"fmt"
	"testing"
)

// kindEntry is an entry of one of the store's three kinds, by size: a
// tree node, a clean data page, an in-memory inode.
type kindEntry struct {
	bytes int64
}

func (e *kindEntry) CacheBytes() int64 { return e.bytes }
func (e *kindEntry) Pinned() bool      { return false }

// TestBudget_Order_ThreeKinds fills one budget with the store's three
// kinds — nodes (4,096 bytes), data pages (4,224) and inodes (712), each
// about a third of the bytes — marks every other entry of each kind used,
// then streams new pages through it (a scan). The order of eviction must
// be SIEVE's within each kind: the unreferenced entries go first, oldest
// first, before any referenced one, and across kinds the bytes evicted
// follow the bytes each kind holds, as one hand over all entries would
// (pickMember): within a quarter of an even share each. The accounting
// is exact after every Add, for each kind and for the budget.
func TestBudget_Order_ThreeKinds(t *testing.T) {
	kinds := []struct {
		name  string
		bytes int64
		n     uint64
	}{{"nodes", 4096, 100}, {"pages", 4224, 97}, {"inodes", 712, 576}}
	var total int64
	for _, k := range kinds {
		total += k.bytes * int64(k.n)
	}
	b := NewBudget(total)
	caches := make([]*Cache[*kindEntry], len(kinds))
	evicted := make([][]uint64, len(kinds))
	evictedBytes := make([]int64, len(kinds))
	for i := range kinds {
		caches[i] = New[*kindEntry](Options{Budget: b, Shards: 1, OnEvict: func(key uint64, e Entry) {
			evicted[i] = append(evicted[i], key)
			evictedBytes[i] += e.CacheBytes()
		}})
	}
	exact := func(when string) {
		t.Helper()
		var sum int64
		for i, c := range caches {
			var held int64
			c.Range(func(_ uint64, e *kindEntry) bool {
				held += e.bytes
				return true
			})
			if held != c.Bytes() {
				t.Fatalf("%s: %s hold %d bytes, charged %d", when, kinds[i].name, held, c.Bytes())
			}
			if err := c.Check(); err != nil {
				t.Fatalf("%s: %s: %v", when, kinds[i].name, err)
			}
			sum += held
		}
		if sum != b.Bytes() {
			t.Fatalf("%s: the kinds hold %d bytes, the budget %d", when, sum, b.Bytes())
		}
		if b.Bytes() > b.BudgetBytes() {
			t.Fatalf("%s: %d bytes over the budget of %d", when, b.Bytes(), b.BudgetBytes())
		}
	}
	// Fill, the kinds interleaved as a store's use would.
	for k := uint64(0); ; k++ {
		added := false
		for i, kd := range kinds {
			if k < kd.n {
				caches[i].Add(k, &kindEntry{bytes: kd.bytes})
				added = true
			}
		}
		if !added {
			break
		}
	}
	exact("filled")
	for i := range caches {
		if len(evicted[i]) != 0 || caches[i].Len() != int(kinds[i].n) {
			t.Fatalf("%s: %d evicted while filling to the budget", kinds[i].name, len(evicted[i]))
		}
	}
	for i, kd := range kinds {
		for k := uint64(0); k < kd.n; k += 2 {
			if _, ok := caches[i].Get(k); !ok {
				t.Fatalf("%s %d missing", kd.name, k)
			}
		}
	}
	// The scan: new pages, each used once, a third of the budget.
	const pageKind = 1
	scan := uint64(kinds[pageKind].n / 3)
	for k := range scan {
		caches[pageKind].Add(1000+k, &kindEntry{bytes: kinds[pageKind].bytes})
		exact(fmt.Sprintf("scan page %d", k))
	}
	var all int64
	for i, kd := range kinds {
		// SIEVE within the kind: the cold ones, oldest first; no
		// referenced entry before them.
		for j, key := range evicted[i] {
			if key >= 1000 {
				continue // a scan page reached by the hand
			}
			if key%2 == 0 {
				t.Errorf("%s: referenced entry %d evicted (eviction %d of %v) while cold ones remained", kd.name, key, j, evicted[i])
			}
			if j > 0 && evicted[i][j-1] < 1000 && evicted[i][j-1] > key {
				t.Errorf("%s: %d evicted after %d: not oldest first (%v)", kd.name, key, evicted[i][j-1], evicted[i])
			}
		}
		all += evictedBytes[i]
	}
	// Across kinds: each kind's share of the evicted bytes is its share
	// of the bytes (a third each), within a quarter.
	for i, kd := range kinds {
		share := float64(evictedBytes[i]) / float64(all)
		held := float64(kd.bytes*int64(kd.n)) / float64(total)
		t.Logf("%s: %d evicted (%d bytes), %.2f of the evicted bytes, %.2f of the held", kd.name, len(evicted[i]), evictedBytes[i], share, held)
		if share < 0.75*held || share > 1.25*held {
			t.Errorf("%s: %.2f of the evicted bytes, hold %.2f of the bytes", kd.name, share, held)
		}
	}
}
