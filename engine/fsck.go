package engine

import (
	"errors"
	"fmt"
	"sort"
)

// CheckReport is what Check found.
type CheckReport struct {
	Trees     int
	Nodes     int
	Items     int
	UsedBytes uint64 // referenced by tree nodes (and data, later)
	FreeBytes uint64 // free in the free space tree
	Problems  []error
	// Warnings: damage that lost nothing — a superblock copy that is
	// damaged or stale while the newest superblock has a sound copy (mount
	// rewrote the newest one's twin; the next superblock write replaces an
	// older one). They do not make Err non-nil.
	Warnings    []error
	problemsCut int
}

// problemsMax bounds the report on a badly damaged device.
const problemsMax = 100

func (r *CheckReport) add(format string, args ...any) {
	if len(r.Problems) >= problemsMax {
		r.problemsCut++
		return
	}
	r.Problems = append(r.Problems, fmt.Errorf(format, args...))
}

// Err joins the problems, nil when clean.
func (r *CheckReport) Err() error {
	if len(r.Problems) == 0 {
		return nil
	}
	errs := r.Problems
	if r.problemsCut > 0 {
		errs = append(errs[:len(errs):len(errs)], fmt.Errorf("... and %d more", r.problemsCut))
	}
	return errors.Join(errs...)
}

// Check verifies every tree and the space accounting of a quiescent engine
// (no transaction running, everything committed): key order within and
// across nodes, parent/child keys and generations, levels, checksums (every
// node is read through verify), fill bounds, and that referenced space plus
// free space is the device, with no block referenced twice. It is fsck; tests
// run it on every engine they open.
func Check(e *Engine) *CheckReport {
	r := &CheckReport{}
	e.checkSuperCopies(r)
	refs := map[Bytenr]uint64{} // bytenr → owner
	e.treesMu.RLock()
	ids := make([]uint64, 0, len(e.trees))
	for id := range e.trees {
		ids = append(ids, id)
	}
	e.treesMu.RUnlock()
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		t := e.Tree(id)
		t.rootLock.RLock()
		root := t.root
		t.rootLock.RUnlock()
		r.Trees++
		e.checkNode(t, root, true, MinKey, MaxKey, false, refs, r)
	}
	// Space: referenced nodes and free extents partition the device.
	var free []extent
	fst := e.Tree(FreeSpaceTreeID)
	if fst == nil { // a read-only mount without it (read_only.go)
		r.add("space: no free space tree")
		return r
	}
	_ = fst.Iterate(MinKey, func(k Key, _ []byte) bool {
		x, err := fstExtent(k)
		if err != nil {
			r.add("%v", err)
			return true
		}
		free = append(free, x)
		return true
	})
	type span struct {
		start, end uint64
		what       string
	}
	var spans []span
	for b, owner := range refs {
		spans = append(spans, span{uint64(b), uint64(b) + uint64(e.geo.nodeSize), fmt.Sprintf("node of tree %d", owner)})
		r.UsedBytes += uint64(e.geo.nodeSize)
	}
	for _, x := range free {
		spans = append(spans, span{x.start, x.end(), "free extent"})
		r.FreeBytes += x.length
	}
	data := e.checkData(r)
	for _, x := range data {
		spans = append(spans, span{x.start, x.end(), fmt.Sprintf("data extent %v", x.key)})
		r.UsedBytes += x.length
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	next := uint64(firstAllocatable)
	for _, s := range spans {
		switch {
		case s.start < next:
			r.add("space: %s [%d, %d) overlaps what ends at %d", s.what, s.start, s.end, next)
		case s.start > next:
			r.add("space: [%d, %d) is neither referenced nor free (leaked)", next, s.start)
		}
		next = max(next, s.end)
	}
	if total := e.alloc.size; next != total {
		r.add("space: accounted up to %d, device ends at %d", next, total)
	}
	if e.sb.BytesUsed != r.UsedBytes {
		r.add("space: superblock says %d bytes used, trees reference %d", e.sb.BytesUsed, r.UsedBytes)
	}
	// A read-only mount never loads the allocator.
	// Log blocks, the chain head included, are taken without a delta: the
	// free space tree counts them free.
	if got := e.alloc.freeBytes() + e.logHeldBytes(); !e.readOnly && got != r.FreeBytes {
		r.add("space: the allocator has %d bytes free, the free space tree %d", got, r.FreeBytes)
	}
	return r
}

// checkSuperCopies reports what mount found in the superblock copies: a
// possible rollback past an acknowledged superblock is a problem, a damaged
// copy beside a sound one a warning.
func (e *Engine) checkSuperCopies(r *CheckReport) {
	ch := &e.super
	r.Warnings = append(r.Warnings, ch.damage...)
	for _, off := range ch.repaired {
		r.Warnings = append(r.Warnings, fmt.Errorf("superblock copy at %d: rewritten from its twin at %d", off, ch.from))
	}
	if ch.lost != nil {
		r.add("%v", ch.lost)
	}
}

// checkNode checks the subtree at eb, whose keys must lie in [lo, hi) (hi
// exclusive unless hiOpen... MaxKey inclusive at the top).
func (e *Engine) checkNode(t *Tree, eb *ExtentBuffer, isRoot bool, lo, hi Key, hiExclusive bool, refs map[Bytenr]uint64, r *CheckReport) {
	r.Nodes++
	if owner, dup := refs[eb.bytenr]; dup {
		r.add("tree %d: node %d is also referenced by tree %d", t.id, eb.bytenr, owner)
		return
	}
	refs[eb.bytenr] = t.id
	if eb.Owner() != t.id {
		r.add("tree %d: node %d owned by %d", t.id, eb.bytenr, eb.Owner())
	}
	if err := eb.checkShape(e.geo.nodeSize); err != nil {
		r.add("tree %d: %v", t.id, err)
		return
	}
	n := eb.ItemCount()
	for i := 0; i < n; i++ {
		k := eb.Key(i)
		if k.Less(lo) || (hiExclusive && !k.Less(hi)) {
			r.add("tree %d: node %d key %d %v outside its parent's range [%v, %v)", t.id, eb.bytenr, i, k, lo, hi)
		}
		if i > 0 && !eb.Key(i-1).Less(k) {
			r.add("tree %d: node %d keys %d and %d out of order: %v, %v", t.id, eb.bytenr, i-1, i, eb.Key(i-1), k)
		}
	}
	if eb.IsLeaf() {
		r.Items += n
		if !isRoot && eb.leafUsed() < e.geo.leafMinUsed() {
			r.add("tree %d: leaf %d uses %d bytes, under the fill bound %d", t.id, eb.bytenr, eb.leafUsed(), e.geo.leafMinUsed())
		}
		return
	}
	if !isRoot && n < e.geo.ptrsMin() {
		r.add("tree %d: node %d has %d pointers, under the fill bound %d", t.id, eb.bytenr, n, e.geo.ptrsMin())
	}
	for i := 0; i < n; i++ {
		child, err := e.readNode(eb.BlockPtr(i), t.id, eb.Level()-1)
		if err != nil {
			r.add("tree %d: node %d child %d: %v", t.id, eb.bytenr, i, err)
			continue
		}
		if child.Generation() != eb.PtrGeneration(i) {
			r.add("tree %d: node %d child %d: generation %d, pointer says %d", t.id, eb.bytenr, i, child.Generation(), eb.PtrGeneration(i))
		}
		if child.Generation() > eb.Generation() {
			r.add("tree %d: node %d (generation %d) points at newer node %d (generation %d)", t.id, eb.bytenr, eb.Generation(), child.bytenr, child.Generation())
		}
		clo, chi, chiEx := eb.Key(i), hi, hiExclusive
		if i+1 < n {
			chi, chiEx = eb.Key(i+1), true
		}
		if child.ItemCount() > 0 && child.Key(0).Less(clo) {
			r.add("tree %d: node %d key %d %v above its child's first key %v", t.id, eb.bytenr, i, clo, child.Key(0))
		}
		e.checkNode(t, child, false, clo, chi, chiEx, refs, r)
	}
}

// dataRef is a regular file extent's disk range and the item naming it.
type dataRef struct {
	extent
	key Key
}

// checkData returns the disk ranges of the fs tree's regular file extents,
// and checks that the csum tree holds exactly one checksum for each of
// their blocks and none for any other block.
func (e *Engine) checkData(r *CheckReport) []dataRef {
	var data []dataRef
	fs, csums := e.Tree(FSTreeID), e.Tree(CsumTreeID)
	if fs == nil || csums == nil {
		return nil
	}
	_ = fs.Iterate(MinKey, func(k Key, b []byte) bool {
		if k.Type != TypeExtentData {
			return true
		}
		x, err := DecodeFileExtent(b)
		switch {
		case err != nil:
			r.add("fs tree: item %v: %v", k, err)
		case x.Type == ExtentRegular:
			data = append(data, dataRef{extent{uint64(x.DiskBytenr), x.NumBytes}, k})
		case k.Offset != 0:
			r.add("fs tree: inline extent %v is not at offset 0", k)
		}
		return true
	})
	var sums []extent
	_ = csums.Iterate(MinKey, func(k Key, b []byte) bool {
		if k.ObjectID != CsumObjectID || k.Type != TypeExtentCsum || len(b) == 0 || len(b)%CsumSize != 0 || k.Offset%SectorSize != 0 {
			r.add("csum tree: malformed item %v of %d bytes", k, len(b))
			return true
		}
		sums = append(sums, extent{k.Offset, uint64(len(b)/CsumSize) * SectorSize})
		return true
	})
	// Both lists sorted by start and, once merged, equal: every data block
	// has a checksum and every checksum a data block.
	ds := make([]extent, len(data))
	for i, d := range data {
		ds[i] = d.extent
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].start < ds[j].start })
	for i := 1; i < len(sums); i++ {
		if sums[i].start < sums[i-1].end() {
			r.add("csum tree: items at %d and %d overlap", sums[i-1].start, sums[i].start)
		}
	}
	a, b := mergeExtents(ds), mergeExtents(sums)
	if len(a) != len(b) {
		r.add("csum tree: %d checksummed ranges for %d data ranges", len(b), len(a))
	}
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			r.add("csum tree: data [%d, %d) but checksums [%d, %d)", a[i].start, a[i].end(), b[i].start, b[i].end())
			break
		}
	}
	return data
}

// mergeExtents merges sorted, adjacent or overlapping extents.
func mergeExtents(xs []extent) []extent {
	var out []extent
	for _, x := range xs {
		if n := len(out); n > 0 && out[n-1].end() >= x.start {
			out[n-1].length = max(out[n-1].end(), x.end()) - out[n-1].start
			continue
		}
		out = append(out, x)
	}
	return out
}
