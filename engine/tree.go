package engine

import (
	"fmt"
	"sync"
	"time"

	"ustore/internal/assert"
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

	// history holds the roots a commit may still ask for (rootAt), oldest
	// first, each with the transaction that made it the root; the last is
	// the current root. A commit finds its transaction's final root there
	// after the next transaction has already replaced it. Empty until the
	// first setRoot: the root set at mount or creation counts as made by
	// its own generation. Guarded by prevMu.
	prevMu  sync.Mutex
	history []rootVersion
	// committedRoot is the root recorded in the root tree at the last
	// commit (bytenr, level, generation); touched only by commits.
	committedRoot rootRef

	classes   [maxLevel + 1]*lock.Class // lock-wait accounting per level
	rootClass *lock.Class               // and of the root pointer
	stats     *treeStats                // shared by every log tree
}

// rootVersion is a root of a tree and the transaction (or log generation)
// that made it the root. That transaction, not the node's generation,
// orders the history: a root collapse makes an unchanged child — of an older
// generation — the root, and a root split then collapse within one
// transaction makes a node the root a second time.
type rootVersion struct {
	root *ExtentBuffer
	by   Generation
}

// rootRef is what a ROOT_ITEM holds.
type rootRef struct {
	bytenr     Bytenr
	level      int
	generation Generation
}

func newTree(e *Engine, id uint64) *Tree {
	t := &Tree{id: id, eng: e, stats: &treeStats{}}
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

// setRoot makes eb the root for transaction tr (rootLock held for
// writing). Within one transaction only the last root matters to anyone
// else, so a transaction's later roots replace its earlier one in the
// history: no root is ever in it twice, and the history stays ordered by
// transaction, which rootAt's walk relies on.
func (t *Tree) setRoot(tr *Trans, eb *ExtentBuffer) {
	t.prevMu.Lock()
	if len(t.history) == 0 && t.root != nil {
		t.history = append(t.history, rootVersion{t.root, t.root.Generation()})
	}
	n := len(t.history)
	assert.That(n == 0 || tr.id >= t.history[n-1].by, "engine: a tree's root set by an older transaction than the last")
	if n > 0 && t.history[n-1].by == tr.id {
		t.history[n-1].root = eb
	} else {
		t.history = append(t.history, rootVersion{eb, tr.id})
	}
	t.prevMu.Unlock()
	t.root = eb
}

// rootAt returns the root of this tree as transaction gen left it: the
// newest root made by a transaction not after gen; nil when the tree was
// created later. The caller ensures no transaction <= gen is still
// modifying the tree.
func (t *Tree) rootAt(gen Generation) *ExtentBuffer {
	// rootLock before prevMu, as setRoot's callers take them. With the
	// history still empty no setRoot has run, so r is the current root.
	t.rootLock.RLock()
	r := t.root
	t.rootLock.RUnlock()
	t.prevMu.Lock()
	defer t.prevMu.Unlock()
	if len(t.history) == 0 {
		if r != nil && r.Generation() > gen {
			return nil
		}
		return r
	}
	for i := len(t.history) - 1; i >= 0; i-- {
		if t.history[i].by <= gen {
			return t.history[i].root
		}
	}
	return nil
}

// forgetRootsBefore drops the roots no commit after gen can ask for: a
// walk for a generation > gen stops at the newest root made by gen+1 or
// before, so the roots older than that one are dead.
func (t *Tree) forgetRootsBefore(gen Generation) {
	t.prevMu.Lock()
	defer t.prevMu.Unlock()
	keep := 0
	for i, v := range t.history {
		if v.by <= gen+1 {
			keep = i
		}
	}
	if keep > 0 {
		t.history = append(t.history[:0:0], t.history[keep:]...)
	}
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
