package engine

// Path is a search path of locked nodes from a tree's root down to a leaf
// (btrfs: struct btrfs_path). Nodes[0] is the leaf; Slots[l] is the slot in
// Nodes[l] the search descended through (at the leaf: the item found, or
// where the key would be inserted).
type Path struct {
	Nodes [maxLevel + 1]*ExtentBuffer
	Slots [maxLevel + 1]int
	locks [maxLevel + 1]lockMode
	tree  *Tree
	// rootLock is the mode the tree's root pointer lock is held in.
	rootLock lockMode
	// upper bounds the keys the leaf may hold: the key of the nearest
	// pointer to the right of the path (hasUpper false: the leaf is the
	// last of the tree). Set by SearchSlot.
	upper    Key
	hasUpper bool
	// lower bounds the leaf from below: the key of the pointer the path
	// took at the lowest level where it was not the first (hasLower false:
	// the leaf is the first of the tree).
	lower    Key
	hasLower bool
	// gens records each level's node generation as the search saw it: a
	// CoW restart needs write locks only up to the nearest ancestor that is
	// already of the running transaction.
	gens [maxLevel + 1]Generation
	// reserveOK: this search deletes, so its CoWs may use the metadata
	// reserve.
	reserveOK bool
}

type lockMode uint8

const (
	unlocked lockMode = iota
	readLocked
	writeLocked
)

// Leaf returns the leaf and the slot.
func (p *Path) Leaf() (*ExtentBuffer, int) { return p.Nodes[0], p.Slots[0] }

// ParentWriteLocked reports whether the search left the leaf's parent (or,
// for a root leaf, the root pointer) write-locked.
func (p *Path) ParentWriteLocked() bool { return p.parentWriteLocked(0) }

// Release unlocks every node and forgets the path. Safe to call twice.
func (p *Path) Release() {
	for l := range p.Nodes {
		p.unlockLevel(l)
		p.Nodes[l] = nil
		p.Slots[l] = 0
	}
	p.unlockRoot()
	p.hasUpper = false
	p.hasLower = false
}

func (p *Path) unlockLevel(l int) {
	eb := p.Nodes[l]
	switch p.locks[l] {
	case readLocked:
		eb.lock.RUnlock()
	case writeLocked:
		eb.lock.Unlock()
	}
	p.locks[l] = unlocked
}

func (p *Path) unlockRoot() {
	if p.tree == nil {
		return
	}
	switch p.rootLock {
	case readLocked:
		p.tree.rootLock.RUnlock()
	case writeLocked:
		p.tree.rootLock.Unlock()
	}
	p.rootLock = unlocked
}

// unlockAbove releases the locks of every level above l (and the root
// pointer lock): lock coupling once level l is known not to change them.
func (p *Path) unlockAbove(l int) {
	for u := l + 1; u <= maxLevel; u++ {
		if p.Nodes[u] != nil && p.locks[u] != unlocked {
			p.unlockLevel(u)
		}
	}
	p.unlockRoot()
}
