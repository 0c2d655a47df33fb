package engine

import (
	"ustore/internal/assert"
	"ustore/journal"
)

// checkCommitInvariants checks every tree as transaction tid leaves it —
// key order, bounds, generations, fill — before tid is written. tid's nodes
// are immutable by now (its handles have ended and tid+1 CoWs them), and
// pinned until tid is durable, so the walk needs no locks. Only with the
// invariants build tag: it reads every node of every tree.
func (e *Engine) checkCommitInvariants(tid journal.Transid) {
	if !invariantsOn {
		return
	}
	e.treesMu.RLock()
	trees := make([]*Tree, 0, len(e.trees))
	for _, t := range e.trees {
		trees = append(trees, t)
	}
	e.treesMu.RUnlock()
	rep := &CheckReport{}
	refs := map[Bytenr]uint64{}
	for _, t := range trees {
		if r := t.rootAt(TransGeneration(tid)); r != nil {
			e.checkNode(t, r, true, MinKey, MaxKey, false, refs, rep)
		}
	}
	err := rep.Err()
	if err != nil {
		assert.Failf("engine: invariants broken in transaction %d: %v", tid, err)
	}
}
