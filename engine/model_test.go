package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// model is the reference: a map of key → payload.
type model map[Key][]byte

func (m model) clone() model {
	c := make(model, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// compareTree checks the tree holds exactly the model, in order.
func compareTree(t *testing.T, tree *Tree, m model) {
	t.Helper()
	keys := make([]Key, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Less(keys[j]) })
	i := 0
	err := tree.Iterate(MinKey, func(k Key, data []byte) bool {
		if i >= len(keys) {
			t.Fatalf("tree has extra item %v", k)
		}
		if k != keys[i] || !bytes.Equal(data, m[k]) {
			t.Fatalf("item %d: tree %v (%d bytes), model %v (%d bytes)", i, k, len(data), keys[i], len(m[keys[i]]))
		}
		i++
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if i != len(keys) {
		t.Fatalf("tree has %d items, model %d", i, len(keys))
	}
}

// randomOps applies n random operations to tree and model in transaction tr.
func randomOps(t *testing.T, rng *rand.Rand, tr *Trans, tree *Tree, m model, n int, keySpace uint64, maxVal int) {
	t.Helper()
	for op := 0; op < n; op++ {
		k := testKey(rng.Uint64N(keySpace))
		switch r := rng.IntN(100); {
		case r < 45: // insert
			v := testValue(rng.Uint64(), rng.IntN(maxVal))
			err := tree.InsertItem(tr, k, v)
			if _, ok := m[k]; ok {
				if !errors.Is(err, ErrExists) {
					t.Fatalf("insert existing %v: %v", k, err)
				}
			} else if err != nil {
				t.Fatalf("insert %v: %v", k, err)
			} else {
				m[k] = v
			}
		case r < 55: // batch insert of consecutive new keys
			// A quarter of the batches step over the existing keys in
			// their range instead of stopping at the first: a batch with
			// an item between its first key and its last breaks the
			// contract, and must be refused whole (ErrExists), wherever
			// the item lies (the first leaf or a later one).
			across := rng.IntN(4) == 0
			var keys []Key
			var vals [][]byte
			start := rng.Uint64N(keySpace)
			for j := uint64(0); j < uint64(1+rng.IntN(60)); j++ {
				kk := testKey(start + j)
				if _, ok := m[kk]; ok {
					if !across {
						break
					}
					continue
				}
				keys = append(keys, kk)
				vals = append(vals, testValue(rng.Uint64(), rng.IntN(maxVal)))
			}
			if len(keys) == 0 {
				continue
			}
			// Consecutive means no existing key in between: the loop above
			// stops at the first existing one, or (across) may have
			// stepped over some between the batch's first key and its last.
			skipped := false
			if across {
				last := keys[len(keys)-1]
				for kk := range m {
					if keys[0].Less(kk) && kk.Less(last) {
						skipped = true
						break
					}
				}
			}
			b, err := NewItemBatch(keys, vals)
			if err != nil {
				t.Fatal(err)
			}
			err = tree.InsertItems(tr, b)
			if skipped {
				if !errors.Is(err, ErrExists) {
					t.Fatalf("batch of %d at %v across an existing key: %v, want ErrExists", len(keys), keys[0], err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("batch of %d at %v: %v", len(keys), keys[0], err)
			}
			for j, kk := range keys {
				m[kk] = vals[j]
			}
		case r < 75: // delete
			err := tree.DeleteItem(tr, k)
			if _, ok := m[k]; ok {
				if err != nil {
					t.Fatalf("delete %v: %v", k, err)
				}
				delete(m, k)
			} else if !errors.Is(err, ErrNotFound) {
				t.Fatalf("delete missing %v: %v", k, err)
			}
		case r < 80: // delete a range
			hi := k
			hi.ObjectID += rng.Uint64N(40)
			want := 0
			for kk := range m {
				if !kk.Less(k) && !hi.Less(kk) {
					want++
					delete(m, kk)
				}
			}
			got, err := tree.DeleteRange(tr, k, hi)
			if err != nil || got != want {
				t.Fatalf("delete range %v..%v: %d, %v; want %d", k, hi, got, err, want)
			}
		case r < 90: // update in place
			err := tree.UpdateItem(tr, k, func(b []byte) {
				for j := range b {
					b[j] ^= 0x5a
				}
			})
			if v, ok := m[k]; ok {
				if err != nil {
					t.Fatalf("update %v: %v", k, err)
				}
				nv := append([]byte(nil), v...)
				for j := range nv {
					nv[j] ^= 0x5a
				}
				m[k] = nv
			} else if !errors.Is(err, ErrNotFound) {
				t.Fatalf("update missing %v: %v", k, err)
			}
		case r < 97: // resize; or truncate, by a size no longer than the item's
			size := rng.IntN(maxVal)
			var err error
			if v, ok := m[k]; ok && size <= len(v) && rng.IntN(2) == 0 {
				err = tree.TruncateItem(tr, k, size)
			} else {
				err = tree.ResizeItem(tr, k, size)
			}
			if v, ok := m[k]; ok {
				if err != nil {
					t.Fatalf("resize %v to %d: %v", k, size, err)
				}
				nv := make([]byte, size)
				copy(nv, v)
				m[k] = nv
			} else if !errors.Is(err, ErrNotFound) {
				t.Fatalf("resize missing %v: %v", k, err)
			}
		default: // lookup
			v, err := tree.Lookup(k)
			if mv, ok := m[k]; ok {
				if err != nil || !bytes.Equal(v, mv) {
					t.Fatalf("lookup %v: %v", k, err)
				}
			} else if !errors.Is(err, ErrNotFound) {
				t.Fatalf("lookup missing %v: %v", k, err)
			}
		}
	}
}

func TestEngine_Model_Random(t *testing.T) {
	for _, c := range []struct {
		nodeSize int
		keySpace uint64
		maxVal   int
	}{{4096, 3000, 200}, {16384, 20000, 600}, {4096, 400, 900}} {
		t.Run(fmt.Sprintf("ns%d_keys%d_val%d", c.nodeSize, c.keySpace, c.maxVal), func(t *testing.T) {
			seed := uint64(rand.Int64())
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(seed, 7))
			e, d := newTestEngine(t, 256<<20, c.nodeSize)
			tr, _ := e.Start()
			if _, err := e.CreateTree(tr, testTree); err != nil {
				t.Fatal(err)
			}
			tr.End()
			m := model{}
			for round := 0; round < 12; round++ {
				tr, err := e.Start()
				if err != nil {
					t.Fatal(err)
				}
				randomOps(t, rng, tr, e.Tree(testTree), m, 1500, c.keySpace, c.maxVal)
				tr.End()
				compareTree(t, e.Tree(testTree), m)
				commit(t, e)
				check(t, e)
				if round%4 == 3 {
					if e.Tree(testTree).Stats().LeafPushes == 0 {
						t.Fatal("no leaf pushed into a sibling: the model did not cover push.go")
					}
					closeEngine(t, e)
					e = mount(t, d)
					check(t, e)
					compareTree(t, e.Tree(testTree), m)
				}
			}
			closeEngine(t, e)
		})
	}
}

var _ = context.Background

// randomTree is a tree of a few thousand random items in a transaction
// that has ended (not committed), its model, and the model's keys in
// ascending order.
func randomTree(t *testing.T, seed uint64) (*Engine, *Tree, model, []Key) {
	e, _ := newTestEngine(t, 64<<20, 4096)
	tr, _ := e.Start()
	tree, _ := e.CreateTree(tr, testTree)
	m := model{}
	rng := rand.New(rand.NewPCG(seed, seed))
	randomOps(t, rng, tr, tree, m, 4000, 2000, 300)
	tr.End()
	keys := make([]Key, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Less(keys[j]) })
	return e, tree, m, keys
}

// sameKeys fails t unless an iteration from from gave want, in order.
func sameKeys(t *testing.T, from Key, got, want []Key) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("from %v: %d items, want %d", from, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("from %v: item %d is %v, want %v", from, i, got[i], want[i])
		}
	}
}

func TestTree_IterateReverse(t *testing.T) {
	e, tree, m, keys := randomTree(t, 5)
	slices.Reverse(keys) // descending
	for _, from := range []Key{MaxKey, testKey(1000), testKey(0), keys[len(keys)/3]} {
		var want []Key
		for _, k := range keys {
			if !from.Less(k) {
				want = append(want, k)
			}
		}
		var got []Key
		if err := tree.IterateReverse(from, func(k Key, data []byte) bool {
			if !bytes.Equal(data, m[k]) {
				t.Fatalf("item %v: wrong payload", k)
			}
			got = append(got, k)
			return true
		}); err != nil {
			t.Fatal(err)
		}
		sameKeys(t, from, got, want)
	}
	commit(t, e)
	check(t, e)
}

// TestTree_IterateFromFloor: the item just below from, then every item
// from from on, against the model, for keys at every leaf's edges (the
// item below in the previous leaf) and between items; and fn's false
// stops it, on the floor item too.
func TestTree_IterateFromFloor(t *testing.T) {
	e, tree, m, keys := randomTree(t, 6)
	froms := []Key{MinKey, MaxKey, keys[0], keys[len(keys)-1]}
	for i := 0; i < len(keys); i += 7 { // every leaf's first key among them
		froms = append(froms, keys[i], keys[i].Next())
	}
	for _, from := range froms {
		i := sort.Search(len(keys), func(i int) bool { return !keys[i].Less(from) })
		want := keys[i:]
		if i > 0 {
			want = keys[i-1:]
		}
		var got []Key
		if err := tree.IterateFromFloor(from, func(k Key, data []byte) bool {
			if !bytes.Equal(data, m[k]) {
				t.Fatalf("item %v: wrong payload", k)
			}
			got = append(got, k)
			return len(got) < 40
		}); err != nil {
			t.Fatal(err)
		}
		want = want[:min(len(want), 40)]
		sameKeys(t, from, got, want)
		n := 0
		if err := tree.IterateFromFloor(from, func(Key, []byte) bool { n++; return false }); err != nil || n != min(1, len(want)) {
			t.Fatalf("from %v: fn saw %d items after returning false (%v)", from, n, err)
		}
	}
	commit(t, e)
	check(t, e)
}
