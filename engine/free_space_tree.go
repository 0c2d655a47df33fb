package engine

import (
	"fmt"
	"sort"

	"ustore/internal/assert"
)

// The free space tree (tree 10) holds one item per free extent. Its key is
// (end, FREE_SPACE_EXTENT, length) — keyed by the extent's end, not its
// start as the founding design first sketched — so that the extent containing a byte
// is the first item whose objectid is above it: a forward search, which is
// all a B-tree cursor does cheaply. docs/FORMAT.md says the same.

func fstKey(start, length uint64) Key {
	return Key{ObjectID: start + length, Type: TypeFreeSpaceExtent, Offset: length}
}

func fstExtent(k Key) (extent, error) {
	if k.Type != TypeFreeSpaceExtent || k.Offset == 0 || k.Offset > k.ObjectID {
		return extent{}, fmt.Errorf("%w: free space item %v", ErrCorruption, k)
	}
	return extent{start: k.ObjectID - k.Offset, length: k.Offset}, nil
}

// applyDelta brings the free space tree from the state before tr's changes
// to the state after them: allocations first, then frees (a block
// allocated and freed in one transaction ends up free).
func (e *Engine) applyDelta(tr *Trans, d *allocDelta) (used int64, err error) {
	allocs, frees := cancelPairs(d.allocs, d.frees)
	fst := e.trees[FreeSpaceTreeID]
	for _, x := range coalesce(allocs) {
		// The allocator checked each allocation as it handed it out
		// (assertTaken); the same holds where the tree takes it.
		if !e.alloc.inDevice(x.start, x.length) {
			assert.Failf("engine: transaction %d allocated [%d, +%d), outside the device", tr.id, x.start, x.length)
		}
		if err := fst.fstTake(tr, x); err != nil {
			return used, err
		}
		used += int64(x.length)
	}
	for _, x := range coalesce(frees) {
		if err := fst.fstGive(tr, x); err != nil {
			return used, err
		}
		used -= int64(x.length)
	}
	return used, nil
}

// cancelPairs drops extents that were allocated and freed whole in the same
// transaction: they were never reachable from a durable superblock, and the
// tree needs neither change.
func cancelPairs(allocs, frees []extent) ([]extent, []extent) {
	freed := make(map[extent]int, len(frees))
	for _, x := range frees {
		freed[x]++
	}
	var a []extent
	for _, x := range allocs {
		if freed[x] > 0 {
			freed[x]--
			continue
		}
		a = append(a, x)
	}
	var f []extent
	for _, x := range frees {
		if freed[x] > 0 {
			freed[x]--
			f = append(f, x)
		}
	}
	return a, f
}

// coalesce sorts extents and merges adjacent ones: metadata allocations are
// clustered, so a commit's thousands of node allocations become a few
// tree updates.
func coalesce(xs []extent) []extent {
	sort.Slice(xs, func(i, j int) bool { return xs[i].start < xs[j].start })
	var out []extent
	for _, x := range xs {
		if n := len(out); n > 0 && out[n-1].end() == x.start {
			out[n-1].length += x.length
			continue
		}
		out = append(out, x)
	}
	return out
}

// fstTake removes [x.start, x.end()) from the free extents; it must lie in
// one free extent (it may span several adjacent free items after a
// coalesce, so take piece by piece).
func (t *Tree) fstTake(tr *Trans, x extent) error {
	for x.length > 0 {
		var found *extent
		err := t.Iterate(Key{ObjectID: x.start + 1}, func(k Key, _ []byte) bool {
			f, err := fstExtent(k)
			if err == nil {
				found = &f
			}
			return false
		})
		if err != nil {
			return err
		}
		if found == nil || found.start > x.start {
			return fmt.Errorf("%w: allocated [%d, %d) is not free in the free space tree", ErrCorruption, x.start, x.end())
		}
		f := *found
		piece := min(x.end(), f.end()) - x.start
		if err := t.DeleteItem(tr, fstKey(f.start, f.length)); err != nil {
			return err
		}
		if x.start > f.start {
			if err := t.InsertItem(tr, fstKey(f.start, x.start-f.start), nil); err != nil {
				return err
			}
		}
		if f.end() > x.start+piece {
			if err := t.InsertItem(tr, fstKey(x.start+piece, f.end()-x.start-piece), nil); err != nil {
				return err
			}
		}
		x.start += piece
		x.length -= piece
	}
	return nil
}

// fstGive adds [x.start, x.end()) to the free extents, merging with the
// free neighbours on either side.
func (t *Tree) fstGive(tr *Trans, x extent) error {
	var near []extent
	err := t.Iterate(Key{ObjectID: x.start}, func(k Key, _ []byte) bool {
		f, err := fstExtent(k)
		if err != nil {
			return false
		}
		if f.start < x.end() && f.end() > x.start {
			near = append(near, extent{^uint64(0), 0}) // overlap marker
			return false
		}
		if f.end() == x.start || f.start == x.end() {
			near = append(near, f)
		}
		return f.start <= x.end() && len(near) < 2
	})
	if err != nil {
		return err
	}
	merged := x
	for _, f := range near {
		if f.start == ^uint64(0) {
			return fmt.Errorf("%w: freed [%d, %d) is already free in the free space tree", ErrCorruption, x.start, x.end())
		}
		if err := t.DeleteItem(tr, fstKey(f.start, f.length)); err != nil {
			return err
		}
		merged.start = min(merged.start, f.start)
		merged.length += f.length
	}
	return t.InsertItem(tr, fstKey(merged.start, merged.length), nil)
}
