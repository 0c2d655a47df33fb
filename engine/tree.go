package engine

import (
	"fmt"
	"sync"
	"time"

	"ustore/lock"
	"ustore/trace"
)

// Tree is one B-tree: its id, its root node and the lock that guards the
// root pointer. The root pointer lock is taken before the root node's lock
// (the top of the lock order) and held in write mode only to replace the
// root (a root split, a root collapse, the first CoW of the root in a
// transaction).
type Tree struct {
	id  uint64
	eng *Engine

	rootLock lock.RWMutex
	root     *ExtentBuffer // guarded by rootLock

	// prevRoots maps a root to the root it replaced, so that a commit can
	// find its transaction's final root after the next transaction has
	// already replaced it. Guarded by prevMu.
	prevMu    sync.Mutex
	prevRoots map[*ExtentBuffer]*ExtentBuffer
	// committedRoot is the root recorded in the root tree at the last
	// commit (bytenr, level, generation); touched only by commits.
	committedRoot rootRef

	classes   [maxLevel + 1]*lock.Class // lock-wait accounting per level
	rootClass *lock.Class               // and of the root pointer
	stats     *treeStats                // shared by every log tree
}

// rootRef is what a ROOT_ITEM holds.
type rootRef struct {
	bytenr     uint64
	level      int
	generation uint64
}

func newTree(e *Engine, id uint64) *Tree {
	t := &Tree{id: id, eng: e, prevRoots: map[*ExtentBuffer]*ExtentBuffer{}, stats: &treeStats{}}
	t.rootClass = lock.NewClass(treeName(id)+".root", lock.RootKind(id))
	t.rootLock.Init(t.rootClass, id)
	for l := range t.classes {
		t.classes[l] = lock.NewClass(fmt.Sprintf("%s.level%d", treeName(id), l), lock.NodeKind(id, l))
		name, level := treeName(id), l
		t.classes[l].Observe(func(d time.Duration) { trace.RecordLockWait(name, level, d) })
	}
	return t
}

// ID returns the tree id.
func (t *Tree) ID() uint64 { return t.id }

// setRoot installs a new root; the caller holds rootLock in write mode.
func (t *Tree) setRoot(eb *ExtentBuffer) {
	t.prevMu.Lock()
	if t.root != nil {
		t.prevRoots[eb] = t.root
	}
	t.prevMu.Unlock()
	t.root = eb
}

// rootAt returns the root of this tree as transaction gen left it: the
// current root when it is not newer, else the root it replaced, and so on.
// The caller ensures no transaction <= gen is still modifying the tree.
func (t *Tree) rootAt(gen uint64) *ExtentBuffer {
	t.rootLock.RLock()
	r := t.root
	t.rootLock.RUnlock()
	t.prevMu.Lock()
	defer t.prevMu.Unlock()
	for r != nil && r.Generation() > gen {
		r = t.prevRoots[r]
	}
	return r
}

// forgetRootsBefore drops the prevRoots entries that no commit after gen
// follows: a walk for a generation > gen stops at the first root whose
// generation is <= gen+1, so entries keyed by such roots are dead.
func (t *Tree) forgetRootsBefore(gen uint64) {
	t.prevMu.Lock()
	for k := range t.prevRoots {
		if k.Generation() <= gen+1 {
			delete(t.prevRoots, k)
		}
	}
	t.prevMu.Unlock()
}

// treeName labels a tree's metrics.
func treeName(id uint64) string {
	switch id {
	case RootTreeID:
		return "root"
	case FSTreeID:
		return "fs"
	case CsumTreeID:
		return "csum"
	case FreeSpaceTreeID:
		return "free_space"
	case LogTreeID:
		return "log"
	}
	return fmt.Sprintf("tree%d", id)
}
