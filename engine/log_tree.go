package engine

import (
	"context"
	"fmt"
	"sort"
	"time"

	"ustore/dev"
	"ustore/journal"
	"ustore/trace"
)

// Log trees (btrfs: tree-log.c's log_root): the engine's side of fast
// fsync. A log tree belongs to one transaction T and lives outside T's
// commit: its nodes are written by log syncs, not by T's commit; its blocks
// are never recorded in the free space tree (T's commit makes the log
// unnecessary, and the free space tree on disk stays that of T-1, which
// replay corrects by claiming the log's blocks before anything allocates);
// and its root is named by the record a log sync appends to the log chain
// (log_chain.go), never by a root item or a superblock.
//
// Generations. A log tree's nodes carry a log generation (LogGen),
// T<<logSubBits | sub, where sub is the log sub-transaction that made them (btrfs: the log
// transid). A log Trans has the log generation as its id, so the CoW rule
// of every tree — a node of another generation is copied before its first
// change — is also the rule of crash safety for logs: a node written by log
// sync k is copied before its first change in k+1, and the record of sync
// k keeps naming an intact tree until sync k+1 is durable.
//
// Blocks. A log block is taken from the free set without a delta. A node
// born and dropped in the same sub-transaction was never written: its block
// goes back at once. A node of an earlier sub-transaction that is CoW'd
// away was (or will be) written by that sync: its block goes back once a
// later log sync is durable (replay falls back at most one record, to a
// tree that still has it until then). All blocks still held, the chain's
// included, go back when T's commit (whose superblock names the next
// transaction's chain) is durable.

// LogTreeID owns log tree nodes (btrfs: BTRFS_TREE_LOG_OBJECTID, -6).
const LogTreeID = ^uint64(5)

// logSubBits is the width of the log sub-transaction in a log generation.
const logSubBits = 24

// LogSubMax is the highest log sub-transaction of one transaction; a
// transaction with more log syncs falls back to commits.
const LogSubMax = 1<<logSubBits - 1

// logState is one transaction's log: guarded by Engine.logMu.
type logState struct {
	tid    journal.Transid
	live   bool                // a log tree was created in this transaction
	blocks map[Bytenr]struct{} // every block the log holds
	// pending are blocks of written nodes CoW'd away, each with the log
	// generation after whose durable superblock it is unreachable.
	pending []pendingBlock
	// gens are the log generations whose dirty nodes are not yet written.
	gens map[Generation]struct{}
	// tree is the transaction's log tree (once live): a tree per
	// transaction, since T+1 may begin logging while T's last fsyncs
	// still log into T's.
	tree *Tree
	// counted is the most log bytes ((blocks + chain) × node size) the journal's
	// dirty-bytes trigger has been told of: a log only its commit frees
	// counts as that transaction's dirty metadata, so a long commit
	// interval under heavy fsync commits once the log is DirtyBytesMax
	// big instead of growing until the device is full.
	counted int64
	// The log chain (log_chain.go): its id, the block the next record goes
	// to (0: no chain, log syncs fall back to commits), the records
	// written, the log generation of the last, and every chain block held
	// (released with the log, node-sized).
	chainID   uint64
	chainNext Bytenr
	chainSeq  uint64
	chainPrev LogGen
	chain     []Bytenr
	// chainRoot is the log root the last record named: its last
	// checkpoint's (none before the first), which a delta names again.
	chainRoot rootRef
}

type pendingBlock struct {
	bytenr Bytenr
	gen    LogGen
}

// logStateLocked returns tid's log state, creating it; e.logMu held.
func (e *Engine) logStateLocked(tid journal.Transid) *logState {
	st := e.logs[tid]
	if st == nil {
		st = &logState{tid: tid, blocks: map[Bytenr]struct{}{}, gens: map[Generation]struct{}{}}
		e.logs[tid] = st
	}
	return st
}

// LogTrans returns a handle for changing tr's log tree in log
// sub-transaction sub, whose nodes carry the generation of sub-transaction
// nodeSub (≤ sub): the first sub-transaction since the log's last
// checkpoint (the log's side decides: logtree/delta.go). The nodes of one
// such run of sub-transactions are changed in place until the checkpoint
// that ends it writes them; a checkpoint's nodes are copied before their
// first change by the next run. It rides on tr's journal handle: the
// caller keeps tr open until the log is synced (T cannot commit under
// it), and End on the log handle does nothing.
func (e *Engine) LogTrans(tr *Trans, sub, nodeSub uint64) (*Trans, error) {
	if sub > LogSubMax {
		return nil, fmt.Errorf("%w: log sub-transaction %d", ErrLogFull, sub)
	}
	if nodeSub == 0 || nodeSub > sub {
		return nil, fmt.Errorf("engine: LogTrans: nodes of sub-transaction %d in sub-transaction %d", nodeSub, sub)
	}
	e.logMu.Lock()
	st := e.logStateLocked(tr.ID())
	e.logMu.Unlock()
	return &Trans{id: MakeLogGen(tr.ID(), nodeSub).Generation(), e: e, log: st, reserved: tr.reserved}, nil
}

// LogTree returns the log tree of lt's transaction, creating an empty one
// on its first use in that transaction.
func (e *Engine) LogTree(lt *Trans) (*Tree, error) {
	if lt.log == nil {
		return nil, fmt.Errorf("engine: LogTree: not a log handle")
	}
	// logRootMu, not logMu: making the root takes logMu.
	e.logRootMu.Lock()
	defer e.logRootMu.Unlock()
	e.logMu.Lock()
	t := lt.log.tree
	e.logMu.Unlock()
	if t != nil {
		return t, nil
	}
	t = e.newLogTree()
	root, err := e.newNode(lt, t, 0, false)
	if err != nil {
		return nil, err
	}
	root.lock.Unlock()
	t.root = root
	e.logMu.Lock()
	lt.log.tree = t
	lt.log.live = true
	e.logMu.Unlock()
	return t, nil
}

// newLogTree makes an empty log tree object that shares the lock classes
// and counters of every log tree.
func (e *Engine) newLogTree() *Tree {
	t := &Tree{id: LogTreeID, eng: e,
		classes: e.logTree.classes, rootClass: e.logTree.rootClass, stats: e.logTree.stats}
	t.rootLock.Init(t.rootClass, LogTreeID)
	return t
}

// LogTreeStats returns the counters of the log trees since mount (parent
// write locks, leaf splits, CoWs).
func (e *Engine) LogTreeStats() TreeStats { return e.logTree.Stats() }

// newLogNode is newNode for a log handle: a block outside any delta.
func (e *Engine) newLogNode(tr *Trans, t *Tree, level int) (*ExtentBuffer, error) {
	bytenr, err := e.alloc.allocLog(uint64(e.geo.nodeSize), tr.reserved)
	if err != nil {
		return nil, err
	}
	eb := e.formatNode(tr, t, level, bytenr)
	e.logMu.Lock()
	tr.log.blocks[bytenr] = struct{}{}
	tr.log.gens[tr.id] = struct{}{}
	e.logMu.Unlock()
	// Dirty under its log generation, but not the transaction's dirty
	// metadata: the log's size is counted by SyncLog, not its churn.
	e.trackDirty(tr.id, eb)
	e.cache.Add(uint64(bytenr), eb)
	return eb, nil
}

// freeLogNode is freeNode for a log handle.
func (e *Engine) freeLogNode(tr *Trans, eb *ExtentBuffer) {
	ns := uint64(e.geo.nodeSize)
	if eb.Generation() == tr.id {
		// Born in this sub-transaction: never written, never reachable
		// from a durable superblock.
		e.removeDirty(tr.id, eb)
		eb.dirty.Store(false)
		e.cache.Remove(uint64(eb.bytenr))
		e.logMu.Lock()
		delete(tr.log.blocks, eb.bytenr)
		e.logMu.Unlock()
		if err := e.alloc.release(uint64(eb.bytenr), ns); err != nil {
			e.fail(err)
		}
		return
	}
	e.logMu.Lock()
	tr.log.pending = append(tr.log.pending, pendingBlock{eb.bytenr, LogGen(tr.id)})
	e.logMu.Unlock()
}

// SyncLog makes log sub-transaction sub of transaction tid durable, with
// every earlier one, then one flush — two device round trips, no
// superblock (log_chain.go). A checkpoint writes the log nodes not yet
// written and the log chain's next record naming the log root, in one
// batch of large writes; a delta writes only the next record, carrying
// delta (at most LogDeltaMax bytes: the log's changes since the record
// before, opaque here), and leaves the nodes dirty for the next
// checkpoint. The caller holds a handle of tid (so tid cannot commit
// meanwhile) and serialises syncs of one transaction (the log transaction
// protocol does); after a delta, the sub-transactions up to the next
// checkpoint must log with the same node generation as the delta's
// (LogTrans). It waits for tid-1 to be durable first: the log records
// changes on top of tid-1, and replay applies it to the newest committed
// state; and tid-1's commit named the chain's head. It returns the number
// of nodes written. An error wrapping ErrLogFull (no chain, or no block
// for its next record) changes nothing: the fsyncs commit instead.
func (e *Engine) SyncLog(ctx context.Context, tid journal.Transid, sub uint64, checkpoint bool, delta []byte) (int, error) {
	if err := e.failure(); err != nil {
		return 0, err
	}
	if !checkpoint && len(delta) > e.LogDeltaMax() {
		return 0, fmt.Errorf("engine: SyncLog: a delta of %d bytes, at most %d", len(delta), e.LogDeltaMax())
	}
	if err := e.WaitCommitted(ctx, tid-1); err != nil {
		return 0, err
	}
	gen := MakeLogGen(tid, sub)
	e.logMu.Lock()
	st := e.logs[tid]
	var at Bytenr
	if st != nil {
		at = st.chainNext
	}
	e.logMu.Unlock()
	if st == nil || !st.live {
		return 0, fmt.Errorf("engine: SyncLog: transaction %d has no log", tid)
	}
	if at == 0 {
		return 0, fmt.Errorf("%w: transaction %d has no log chain", ErrLogFull, tid)
	}
	ns := uint64(e.geo.nodeSize)
	next, err := e.alloc.allocLog(ns, true)
	if err != nil {
		return 0, fmt.Errorf("%w: no block for the log chain: %w", ErrLogFull, err)
	}
	e.logMu.Lock()
	st.chain = append(st.chain, next)
	prev, seq, root := st.chainPrev, st.chainSeq+1, st.chainRoot
	var gens []Generation
	if checkpoint {
		gens = e.takeLogGensLocked(st, gen)
	}
	e.logMu.Unlock()
	rec := chainRecord{bytenr: at, id: st.chainID, transid: tid, seq: seq,
		gen: gen, prevGen: prev, next: next, root: root, digest: crc32c(nil), delta: !checkpoint}
	var nodes []*ExtentBuffer
	if checkpoint {
		nodes = e.takeLogDirty(gens)
		sealNodes(nodes)
		r := st.tree.rootAt(gen.Generation())
		rec.digest, err = e.logDigest(st.tree, r, root.generation)
		if err != nil {
			return 0, e.fail(fmt.Errorf("engine: log sync %d.%d: %w", tid, sub, err))
		}
		rec.root = rootRef{bytenr: r.bytenr, level: r.Level(), generation: r.Generation()}
	}
	start := time.Now()
	trace.PhaseBegin(uint64(gen), trace.PhaseLogSync, trace.SpanFromContext(ctx).Key()) // for eBPF
	defer trace.PhaseEnd(uint64(gen), trace.PhaseLogSync)

	e.commitMu.Lock()
	onTop := e.sb.Generation == tid-1
	e.commitMu.Unlock()
	if !onTop {
		return 0, e.fail(fmt.Errorf("engine: SyncLog: transaction %d on top of generation %d", tid, e.CommittedGeneration()))
	}
	// A checkpoint's record is written as its whole node-sized block,
	// zeros after its header: the block was allocated just before the
	// nodes this sync CoW'd, so it usually lies right before them, and the
	// device writes the record and the nodes as one request (uringdev
	// merges adjacent writes). A delta writes its sectors only.
	var recBuf []byte
	if checkpoint {
		recBuf = rec.encode(e.fsid, int(ns), nil)
	} else {
		recBuf = rec.encode(e.fsid, chainRecordLen(len(delta)), delta)
	}
	ios := append(e.nodeWrites(nodes), dev.IO{Off: int64(at), Buf: recBuf})
	e.stats.logSyncRoundTrips.Add(uint64(roundTrips(ios)))
	if err := e.dev.WriteDurable(ios); err != nil {
		return 0, e.fail(fmt.Errorf("engine: log sync %d.%d: %w", tid, sub, err))
	}
	markWritten(nodes)
	e.logMu.Lock()
	st.chainNext, st.chainSeq, st.chainPrev, st.chainRoot = next, seq, gen, rec.root
	e.logMu.Unlock()
	free, grown := e.retireLogBlocks(st, gen, checkpoint)
	e.releaseLogBlocks(free)
	if grown > 0 && e.j != nil && e.j.Running() == tid {
		// Only the log's growth past what was counted: the blocks each
		// sync CoWs and frees again are churn, not size.
		e.j.AddDirty(grown)
	}
	e.stats.logSyncs.Add(1)
	if !checkpoint {
		e.stats.logDeltas.Add(1)
		e.stats.logDeltaBytes.Add(uint64(len(delta)))
	}
	e.stats.nodesWritten.Add(uint64(len(nodes)))
	e.log.Debug("engine: log synced", "transid", tid, "sub", sub, "checkpoint", checkpoint, "nodes", len(nodes), "delta", len(delta), "seq", seq, "took", time.Since(start))
	return len(nodes), nil
}

// takeLogGensLocked takes from st the log generations up to gen whose
// nodes are not yet written; e.logMu held.
func (e *Engine) takeLogGensLocked(st *logState, gen LogGen) []Generation {
	var gens []Generation
	for g := range st.gens {
		if g <= gen.Generation() {
			gens = append(gens, g)
			delete(st.gens, g)
		}
	}
	return gens
}

// takeLogDirty takes the dirty nodes of log generations gens, in bytenr
// order.
func (e *Engine) takeLogDirty(gens []Generation) []*ExtentBuffer {
	var nodes []*ExtentBuffer
	for _, g := range gens {
		nodes = append(nodes, e.takeDirty(g)...)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].bytenr < nodes[j].bytenr })
	return nodes
}

// retireLogBlocks takes out of st the blocks that log generation gen's
// durable checkpoint made unreachable, to be released, and returns by how
// much the log grew past what the journal was told of (counting it now).
// A delta (checkpoint false) retires nothing: its record names the last
// checkpoint's tree, which the blocks CoW'd away since are still part of.
func (e *Engine) retireLogBlocks(st *logState, gen LogGen, checkpoint bool) (free []Bytenr, grown int64) {
	e.logMu.Lock()
	defer e.logMu.Unlock()
	if checkpoint {
		keep := st.pending[:0]
		for _, p := range st.pending {
			if p.gen <= gen {
				free = append(free, p.bytenr)
				delete(st.blocks, p.bytenr)
			} else {
				keep = append(keep, p)
			}
		}
		st.pending = keep
	}
	grown = int64(len(st.blocks)+len(st.chain))*int64(e.geo.nodeSize) - st.counted
	if grown > 0 {
		st.counted += grown
	}
	return free, grown
}

// releaseLogBlocks returns log blocks no durable record reaches.
func (e *Engine) releaseLogBlocks(blocks []Bytenr) {
	ns := uint64(e.geo.nodeSize)
	for _, b := range blocks {
		if eb, ok := e.cache.Remove(uint64(b)); ok {
			eb.dirty.Store(false)
		}
		if err := e.alloc.release(uint64(b), ns); err != nil {
			e.fail(err)
			return
		}
	}
}

// dropLog releases transaction tid's log once tid is durable: the
// superblock of its commit names another chain.
func (e *Engine) dropLog(tid journal.Transid) {
	e.logMu.Lock()
	st := e.logs[tid]
	delete(e.logs, tid)
	e.logMu.Unlock()
	if st == nil {
		return
	}
	for g := range st.gens {
		for _, eb := range e.takeDirty(g) {
			eb.dirty.Store(false)
		}
	}
	blocks := make([]Bytenr, 0, len(st.blocks)+len(st.chain))
	for b := range st.blocks {
		blocks = append(blocks, b)
	}
	e.releaseLogBlocks(append(blocks, st.chain...))
}

// ClaimData records data space that only the log references as allocated
// in tr: the free space tree of the last commit counts it free.
func (e *Engine) ClaimData(tr *Trans, start Bytenr, length uint64) error {
	if err := e.alloc.claim(uint64(start), length); err != nil {
		return fmt.Errorf("engine: logged data [%d, +%d): %w", start, length, err)
	}
	e.alloc.useData(tr.id, uint64(start), length)
	return nil
}

// CommittedGeneration is the generation of the newest durable commit: its
// transaction id.
func (e *Engine) CommittedGeneration() journal.Transid {
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	return e.sb.Generation
}
