package logtree

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/btree"

	"ustore/engine"
)

// TestDelta_ReplaysAsTheTreeSaw: random puts (inserts and replacements)
// and range deletes, recorded as ops in several deltas and applied in
// order over a starting set of items, leave exactly the items a model
// applying the same changes holds.
func TestDelta_ReplaysAsTheTreeSaw(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	key := func() engine.Key {
		return engine.Key{ObjectID: 256 + rng.Uint64N(4), Type: uint8(rng.IntN(3)), Offset: rng.Uint64N(50)}
	}
	model := map[engine.Key][]byte{}
	r := &rebuiltLog{items: btree.NewG(4, logItemLess)}
	for range 40 { // the checkpoint's items
		k, v := key(), []byte(fmt.Sprint(rng.Int()))
		model[k] = v
		r.items.ReplaceOrInsert(logItem{k, v})
	}
	var deltas [][]byte
	for range 20 {
		var d delta
		for range 30 {
			if rng.IntN(4) == 0 {
				from, to := key(), key()
				if to.Less(from) {
					from, to = to, from
				}
				d.deleteRange(1<<20, from, to)
				for k := range model {
					if !k.Less(from) && !to.Less(k) {
						delete(model, k)
					}
				}
				continue
			}
			k, v := key(), bytes.Repeat([]byte{byte(rng.IntN(256))}, rng.IntN(40))
			d.put(1<<20, k, v)
			model[k] = v
		}
		deltas = append(deltas, d.ops)
	}
	for i, d := range deltas {
		if err := r.apply(d); err != nil {
			t.Fatalf("delta %d: %v", i, err)
		}
	}
	var want []engine.Key
	for k := range model {
		want = append(want, k)
	}
	slices.SortFunc(want, engine.Key.Compare)
	var got []engine.Key
	r.items.Ascend(func(it logItem) bool {
		got = append(got, it.key)
		if !bytes.Equal(it.data, model[it.key]) {
			t.Errorf("%v: %q, want %q", it.key, it.data, model[it.key])
		}
		return true
	})
	if !slices.Equal(got, want) {
		t.Fatalf("keys after the deltas: %v\nwant %v", got, want)
	}
}

// TestDelta_OverAndMalformed: a delta past its record's room stops
// recording (its sync checkpoints instead); ops cut short or of an unknown
// kind are refused.
func TestDelta_OverAndMalformed(t *testing.T) {
	var d delta
	d.put(100, engine.Key{ObjectID: 1}, make([]byte, 50))
	if d.over || len(d.ops) == 0 {
		t.Fatalf("a put within the room: over %v, %d bytes", d.over, len(d.ops))
	}
	d.put(100, engine.Key{ObjectID: 2}, make([]byte, 50))
	if !d.over || d.ops != nil {
		t.Fatalf("past the room: over %v, %d bytes kept", d.over, len(d.ops))
	}
	d.deleteRange(100, engine.Key{}, engine.Key{ObjectID: 9})
	if d.ops != nil {
		t.Fatalf("an op after over was recorded")
	}
	var ok delta
	ok.put(1<<10, engine.Key{ObjectID: 1}, []byte("abc"))
	for _, b := range [][]byte{ok.ops[:len(ok.ops)-1], ok.ops[:10], {opDeleteRange, 1, 2}, {9}} {
		r := &rebuiltLog{items: btree.NewG(4, logItemLess)}
		if err := r.apply(b); err == nil {
			t.Errorf("ops %x applied; want a refusal", b)
		}
	}
}
