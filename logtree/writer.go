package logtree

import (
	"errors"

	"ustore/engine"
)

// Writer writes one context's items into the log tree of its transaction,
// and records each change in the delta of its sub-transaction (delta.go).
type Writer struct {
	l  *Log
	lt *engine.Trans
	t  *engine.Tree
	d  *delta // nil: changes are not recorded (Log.DeltaRun 0)
}

// Writer returns a writer for context c and its log handle lt (both from
// Join), creating the transaction's log tree on first use.
func (l *Log) Writer(c *Ctx, lt *engine.Trans) (*Writer, error) {
	t, err := l.e.LogTree(lt)
	if err != nil {
		return nil, err
	}
	w := &Writer{l: l, lt: lt, t: t}
	if l.DeltaRun > 0 { // with every sync a checkpoint, no delta is read
		w.d = &l.deltas[c.sub%2]
	}
	return w, nil
}

// Set puts an item into the log, replacing one with the same key. An item
// already logged in this transaction with the same size — an inode item
// logged again — is overwritten through a leaf-only search (insLen 0): the
// leaf is write-locked, its parent is not, and nothing splits (the 2021
// btrfs fsync patch, part 4). With Log.Ablations.LogInsertSearch set (an
// ablation for benchmarks) the search reserves room as an insert would,
// taking the parent's write lock.
func (w *Writer) Set(key engine.Key, data []byte) error {
	return w.change(func() error { return w.set(key, data) },
		func(d *delta) { d.put(w.l.deltaMax, key, data) })
}

// change makes a change to the log tree (op) and, when changes are
// recorded, records it in the sub-transaction's delta (record), under
// deltaMu held across both: the ops are in the order the tree saw them.
func (w *Writer) change(op func() error, record func(d *delta)) error {
	if w.d == nil {
		return op()
	}
	w.l.deltaMu.Lock()
	defer w.l.deltaMu.Unlock()
	if err := op(); err != nil {
		return err
	}
	record(w.d)
	return nil
}

func (w *Writer) set(key engine.Key, data []byte) error {
	insLen := 0
	if w.l.Ablations.LogInsertSearch {
		insLen = len(data) + 64
	}
	var p engine.Path
	found, err := w.t.SearchSlot(w.lt, key, &p, insLen, true)
	if err != nil {
		p.Release()
		return err
	}
	if found {
		leaf, slot := p.Leaf()
		if leaf.ItemSize(slot) == len(data) {
			copy(leaf.ItemData(slot), data)
			if p.ParentWriteLocked() {
				w.l.stats.inPlaceParentLocked.Add(1)
			}
			p.Release()
			w.l.stats.inPlace.Add(1)
			return nil
		}
	}
	p.Release()
	if found {
		if err := w.t.DeleteItem(w.lt, key); err != nil {
			return err
		}
	}
	w.l.stats.inserted.Add(1)
	return w.t.InsertItem(w.lt, key, data)
}

// Insert inserts items with ascending keys, none of which may be in the
// log, as one batch: one search per leaf-full and one bulk copy of their
// data (the 2021 btrfs bulk-insertion patch).
func (w *Writer) Insert(keys []engine.Key, payloads [][]byte) error {
	if len(keys) == 0 {
		return nil
	}
	b, err := engine.NewItemBatch(keys, payloads)
	if err != nil {
		return err
	}
	w.l.stats.inserted.Add(uint64(len(keys)))
	return w.change(func() error { return w.t.InsertItems(w.lt, b) },
		func(d *delta) {
			for i, k := range keys {
				d.put(w.l.deltaMax, k, payloads[i])
			}
		})
}

// DeleteRange deletes the logged items with keys in [from, to].
func (w *Writer) DeleteRange(from, to engine.Key) error {
	return w.change(func() error { _, err := w.t.DeleteRange(w.lt, from, to); return err },
		func(d *delta) { d.deleteRange(w.l.deltaMax, from, to) })
}

// Lookup returns a logged item's payload (a copy), or engine.ErrNotFound.
func (w *Writer) Lookup(key engine.Key) ([]byte, error) {
	b, err := w.t.Lookup(key)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), b...), nil
}

// Iterate calls fn for each logged item from key on, while fn returns
// true; data is valid only during the call.
func (w *Writer) Iterate(from engine.Key, fn func(k engine.Key, data []byte) bool) error {
	return w.t.Iterate(from, fn)
}

// IterateReverse calls fn for each logged item from key down, while fn
// returns true; data is valid only during the call.
func (w *Writer) IterateReverse(from engine.Key, fn func(k engine.Key, data []byte) bool) error {
	return w.t.IterateReverse(from, fn)
}

// IsNotFound reports whether err means an absent item.
func IsNotFound(err error) bool { return errors.Is(err, engine.ErrNotFound) }
