package engine

// cow copies the old node at level into a new block of transaction tr
// (btrfs: btrfs_cow_block): the copy takes the old one's place in the path
// and in its parent (or as the tree's root); the old block is freed, pinned
// until tr is durable, and the old in-memory node is left untouched — it is
// still the committed state's node and may be being written by the commit of
// its own generation. The caller holds the old node and its parent (or the
// root pointer) write-locked.
func (t *Tree) cow(tr *Trans, p *Path, level int) error {
	e := t.eng
	old := p.Nodes[level]
	neb, err := e.newNode(tr, t, old.Level(), p.reserveOK)
	if err != nil {
		return err
	}
	copy(neb.data[hdrFsid:], old.data[hdrFsid:])
	neb.setBytenrHeader(neb.bytenr)
	neb.setGeneration(tr.id)
	if parent := p.Nodes[level+1]; parent != nil {
		slot := p.Slots[level+1]
		parent.setPtr(slot, parent.Key(slot), neb.bytenr, tr.id)
	} else {
		t.setRoot(tr, neb)
	}
	e.freeNode(tr, old)
	// The old node is no longer reachable from the running tree: let the
	// cache forget it now — unless it is still dirty: then its transaction
	// is being committed, and that commit's reads of its own tree (the
	// invariants check) must find it here, not on disk before it is written.
	if !old.dirty.Load() {
		e.cache.Remove(uint64(old.bytenr))
	}
	old.lock.Unlock()
	p.Nodes[level] = neb
	t.stats.cows.Add(1)
	return nil
}

// newNode allocates a block for a node of tree t at level, formats it and
// returns it write-locked, dirty and cached.
//
// reserveOK lets the allocation dip into the metadata reserve: deletes and
// commits may (they are how a full device gets space back); inserts may
// not, so a full device still has room to delete and commit.
func (e *Engine) newNode(tr *Trans, t *Tree, level int, reserveOK bool) (*ExtentBuffer, error) {
	if tr.log != nil {
		return e.newLogNode(tr, t, level)
	}
	bytenr, err := e.alloc.allocMeta(tr.id, uint64(e.geo.nodeSize), reserveOK || tr.commit || tr.reserved)
	if err != nil {
		return nil, err
	}
	eb := e.formatNode(tr, t, level, bytenr)
	e.addDirty(tr.id, eb)
	e.cache.Add(uint64(bytenr), eb)
	return eb, nil
}

// formatNode makes tr's new, empty node of t at level, to be written at
// bytenr: write-locked and dirty. A fresh buffer is zeroed by the
// allocator: no second clear.
func (e *Engine) formatNode(tr *Trans, t *Tree, level int, bytenr Bytenr) *ExtentBuffer {
	eb := newExtentBuffer(bytenr, alignedNode(e.geo.nodeSize), t.classes[level])
	eb.setHeader(e.fsid, tr.id, t.id, level)
	eb.lock.Lock()
	eb.dirty.Store(true)
	return eb
}

// abandonNode gives back a node just made by newNode and never linked.
func (e *Engine) abandonNode(tr *Trans, eb *ExtentBuffer) {
	e.freeNode(tr, eb)
	eb.lock.Unlock()
}

// freeNode frees a node's block in transaction tr. A node born in tr was
// never on disk: it leaves the dirty set and the cache at once. Its block,
// like every freed block, stays pinned until tr is durable.
func (e *Engine) freeNode(tr *Trans, eb *ExtentBuffer) {
	if tr.log != nil {
		e.freeLogNode(tr, eb)
		return
	}
	if eb.Generation() == tr.id {
		e.removeDirty(tr.id, eb)
		eb.dirty.Store(false)
		e.cache.Remove(uint64(eb.bytenr))
	}
	e.alloc.free(tr.id, uint64(eb.bytenr), uint64(e.geo.nodeSize))
}
