package engine

import (
	"sync/atomic"

	"ustore/dev"
	"ustore/evict"
	"ustore/lock"
)

type treeStats struct {
	cows, leafSplits, nodeSplits, merges, rebalances, restarts atomic.Uint64
	leafPushes                                                 atomic.Uint64
	parentWriteLocks, itemsInserted                            atomic.Uint64
}

// TreeStats are a tree's counters since mount: benchmarks show them.
type TreeStats struct {
	CoWs                                                 uint64 `metric:"name=cows"`
	LeafSplits, NodeSplits, Merges, Rebalances, Restarts uint64
	// ParentWriteLocks counts internal nodes a search write-locked: the
	// parent write locks that an insLen 0 search avoids.
	ParentWriteLocks uint64
	ItemsInserted    uint64
	// LeafPushes counts full leaves that made room by moving items into a
	// sibling instead of splitting (push.go).
	LeafPushes uint64
}

// Stats returns the tree's counters.
func (t *Tree) Stats() TreeStats {
	s := t.stats
	return TreeStats{
		CoWs: s.cows.Load(), LeafSplits: s.leafSplits.Load(), NodeSplits: s.nodeSplits.Load(),
		Merges: s.merges.Load(), Rebalances: s.rebalances.Load(), Restarts: s.restarts.Load(),
		ParentWriteLocks: s.parentWriteLocks.Load(), ItemsInserted: s.itemsInserted.Load(),
		LeafPushes: s.leafPushes.Load(),
	}
}

type engineStats struct {
	commits, logSyncs, nodesWritten, nodeReads, corrupt atomic.Uint64
	logSyncRoundTrips                                   atomic.Uint64
	logDeltas, logDeltaBytes                            atomic.Uint64
}

// Stats are the engine's counters since mount.
type Stats struct {
	Commits, LogSyncs, NodesWritten, NodeReads, Corrupt uint64
	// LogSyncRoundTrips counts the device round trips log syncs waited
	// on, one after the other: each batch of writes and each flush.
	LogSyncRoundTrips uint64
	// LogDeltas counts the log syncs that wrote a delta record (no
	// nodes), and LogDeltaBytes the changes those records carried.
	LogDeltas, LogDeltaBytes uint64
}

// Stats returns the engine's counters.
func (e *Engine) Stats() Stats {
	s := &e.stats
	return Stats{Commits: s.commits.Load(), LogSyncs: s.logSyncs.Load(), NodesWritten: s.nodesWritten.Load(), NodeReads: s.nodeReads.Load(), Corrupt: s.corrupt.Load(),
		LogSyncRoundTrips: s.logSyncRoundTrips.Load(), LogDeltas: s.logDeltas.Load(), LogDeltaBytes: s.logDeltaBytes.Load()}
}

// CacheStats returns the node cache's counters and size (its part of a
// budget it shares with the store's page cache): its hit ratio is
// Hits/(Hits+Misses).
func (e *Engine) CacheStats() evict.Stats { return e.cache.Stats() }

// LockStats returns the node-lock wait accounting of each level of the tree
// (index = level) and of its root pointer (last): only contended
// acquisitions are counted, with a power-of-two histogram of their waits.
func (t *Tree) LockStats() []lock.ClassStats {
	out := make([]lock.ClassStats, 0, len(t.classes)+1)
	for _, c := range t.classes {
		out = append(out, c.Snapshot())
	}
	return append(out, t.rootClass.Snapshot())
}

// roundTrips is the number of device round trips WriteDurable(stages...)
// waits on, one after the other: per stage, its writes (when it has any)
// and its flush. A lone write linked to its flush in one submission is
// still two: the flush starts when the write has completed.
func roundTrips(stages ...[]dev.IO) int {
	n := 0
	for _, s := range stages {
		if len(s) > 0 {
			n++
		}
		n++
	}
	return n
}
