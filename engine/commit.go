package engine

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"ustore/dev"
	"ustore/internal/assert"
	"ustore/journal"
	"ustore/trace"
)

// commit writes transaction tid to disk. The journal calls it once every
// handle of tid has ended, while tid+1 may already run: tid's nodes are then
// immutable (tid+1 CoWs them before any change), and the trees touched here
// — the root tree and the free space tree — change only in commits.
//
//  1. Root items and the free space tree, until both stop changing (updating
//     one allocates for the other): updateRoots.
//  2. Every dirty node of tid, checksummed, in large batches; flush.
//  3. The superblock (sequence +1, slot by sequence) and its mirror; flush
//     (writeSuper). A log sync writes no superblock: a chain record.
//  4. The new state published in memory: publishCommit.
//
// An error leaves the previous superblock the newest durable one and the
// engine read-only.
func (e *Engine) commit(ctx context.Context, tid journal.Transid) error {
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	if err := e.failure(); err != nil {
		return err
	}
	start := time.Now()
	ctx, span := trace.Start(ctx, "journal.commit", trace.Transid(uint64(tid)))
	defer span.End()
	trace.PhaseBegin(uint64(tid), trace.PhaseCommit, span.Key()) // for eBPF; ended by the defer below
	defer trace.PhaseEnd(uint64(tid), trace.PhaseCommit)
	phase := newCommitPhases(ctx, tid)
	defer phase.end()
	phase.begin("update_roots")
	used, pendingRoots, err := e.updateRoots(tid)
	if err != nil {
		return err
	}
	tUpdates := time.Since(start)
	e.checkCommitInvariants(tid)

	rootTree := e.trees[RootTreeID]
	w := e.commitSuperWrite(tid, rootTree, used)
	tWrite := time.Now()
	if err := e.writeSuper(w, phase); err != nil {
		span.RecordError(err)
		return e.fail(fmt.Errorf("engine: commit %d: %w", tid, err))
	}
	span.SetAttributes(trace.Nodes(len(w.nodes)), trace.Bytes(int64(w.bytes())))
	trace.RecordCommit(time.Since(start))
	e.publishCommit(tid, w, rootTree, used, pendingRoots)
	e.stats.commits.Add(1)
	e.stats.nodesWritten.Add(uint64(len(w.nodes)))
	e.log.Debug("engine: committed", "transid", tid, "nodes", len(w.nodes), "updates", tUpdates,
		"write", time.Since(tWrite), "took", time.Since(start))
	return nil
}

// updateRoots is commit's first phase: root items and the free space tree,
// until both stop changing. It returns the bytes in use once tid is
// committed and the root items it wrote, by tree; an error has made the
// engine read-only.
func (e *Engine) updateRoots(tid journal.Transid) (used int64, pendingRoots map[uint64]rootRef, err error) {
	tr := &Trans{id: TransGeneration(tid), e: e, commit: true}
	used = int64(e.usedBytes)
	pendingRoots = map[uint64]rootRef{}
	for round := 0; ; round++ {
		if round > 64 {
			return 0, nil, e.fail(fmt.Errorf("engine: commit %d: root items and free space did not converge", tid))
		}
		changed, err := e.updateRootItems(tr, pendingRoots)
		if err != nil {
			return 0, nil, e.fail(err)
		}
		if d := e.alloc.takeDelta(tr.id); d != nil {
			delta, err := e.applyDelta(tr, d)
			if err != nil {
				return 0, nil, e.fail(err)
			}
			used += delta
			changed = true
		}
		if !changed {
			return used, pendingRoots, nil
		}
	}
}

// commitSuperWrite seals tid's dirty nodes and makes the superblock that
// names tid's root tree and the head of tid+1's log chain: tid's log, if
// any, is unnecessary once this superblock is durable.
func (e *Engine) commitSuperWrite(tid journal.Transid, rootTree *Tree, used int64) superWrite {
	nodes := e.takeDirty(TransGeneration(tid))
	sealNodes(nodes)
	w := superWrite{nodes: nodes, ios: e.nodeWrites(nodes), sb: e.nextSuper()}
	r := rootTree.rootAt(TransGeneration(tid))
	w.sb.Generation = tid
	w.sb.Root = rootRef{bytenr: r.bytenr, level: r.Level(), generation: r.Generation()}
	w.sb.BytesUsed = uint64(used)
	w.sb.LogChain, w.sb.ChainID = e.newLogChain(tid + 1)
	return w
}

// publishCommit makes the durable commit of tid the engine's state: its
// nodes clean (so evictable: the cache goes back to budget), its
// superblock, space and roots the committed ones.
func (e *Engine) publishCommit(tid journal.Transid, w superWrite, rootTree *Tree, used int64, pendingRoots map[uint64]rootRef) {
	markWritten(w.nodes)
	e.cache.Shrink()
	e.publishSuper(w.sb)
	e.usedBytes = uint64(used)
	for id, ref := range pendingRoots {
		e.trees[id].committedRoot = ref
	}
	rootTree.committedRoot = w.sb.Root
	e.treesMu.RLock()
	for _, t := range e.trees {
		t.forgetRootsBefore(TransGeneration(tid))
	}
	e.treesMu.RUnlock()
}

// superWrite is what a commit ends with (btrfs:
// btrfs_write_and_wait_transaction, then write_all_supers): its nodes,
// sealed, written and flushed, then the next superblock — both copies
// (superWrites) — and a flush. e.commitMu is held from nextSuper to
// publishSuper.
type superWrite struct {
	nodes []*ExtentBuffer
	ios   []dev.IO // the nodes, one write each (nodeWrites)
	sb    Superblock
}

// bytes is the size of the node writes.
func (w superWrite) bytes() int {
	n := 0
	for _, io := range w.ios {
		n += len(io.Buf)
	}
	return n
}

// sealNodes checksums nodes. The write lock orders the checksum store after
// any reader's copy (a CoW by the next transaction reads the node under its
// lock).
func sealNodes(nodes []*ExtentBuffer) {
	for _, eb := range nodes {
		eb.lock.Lock()
		eb.seal()
		eb.lock.Unlock()
	}
}

// nextSuper returns the superblock to follow e.sb: the next sequence, in
// that sequence's slot. The caller fills in what it names; e.commitMu held.
func (e *Engine) nextSuper() Superblock {
	sb := e.sb
	sb.Seq++
	sb.Bytenr = slotOffset(sb.Seq)
	return sb
}

// writeSuper makes a commit's w durable: the nodes in parallel, a flush,
// the superblock, a flush, as three device calls, so that each phase is
// timed and traced on its own.
func (e *Engine) writeSuper(w superWrite, phase *commitPhases) error {
	assert.That(w.sb.Seq == e.sb.Seq+1 && w.sb.Bytenr == slotOffset(w.sb.Seq),
		"engine: a superblock write follows the newest superblock, in its slot")
	phase.begin("write_nodes", trace.Nodes(len(w.nodes)), trace.Bytes(int64(w.bytes())))
	err := e.dev.Write(w.ios)
	if err == nil {
		phase.begin("flush")
		err = e.dev.Flush()
	}
	if err == nil {
		checkUnchangedSinceSeal(w.nodes)
		phase.begin("super")
		err = e.dev.WriteDurable(superWrites(w.sb))
	}
	phase.end()
	return err
}

// checkUnchangedSinceSeal asserts that each node still matches the checksum
// sealed into it. The device wrote each node from its own buffer, so a
// change between seal and the flush could have reached the disk torn or
// not at all while the checksum names the sealed contents. Only with the
// invariants build tag: it checksums every node of the commit again.
func checkUnchangedSinceSeal(nodes []*ExtentBuffer) {
	if !invariantsOn {
		return
	}
	for _, eb := range nodes {
		eb.lock.RLock()
		got, sealed := eb.csum(), eb.storedCsum()
		eb.lock.RUnlock()
		if got != sealed {
			assert.Failf("engine: node %d changed after it was sealed for writing (csum %#x, sealed %#x)",
				eb.Bytenr(), got, sealed)
		}
	}
}

// publishSuper makes sb, durable now, the engine's newest superblock;
// e.commitMu held.
func (e *Engine) publishSuper(sb Superblock) {
	assert.That(sb.Seq == e.sb.Seq+1, "engine: superblocks are published in sequence")
	e.sb = sb
}

// markWritten marks nodes clean once their superWrite is durable.
func markWritten(nodes []*ExtentBuffer) {
	for _, eb := range nodes {
		eb.dirty.Store(false)
	}
}

// committed runs after the journal published tid: the space tid freed is
// reusable now.
func (e *Engine) committed(tid journal.Transid) {
	if err := e.alloc.unpin(TransGeneration(tid)); err != nil {
		e.fail(err)
	}
	e.dropLog(tid)
}

// updateRootItems writes each tree's root as of tr into the root tree.
func (e *Engine) updateRootItems(tr *Trans, pending map[uint64]rootRef) (bool, error) {
	e.treesMu.RLock()
	trees := make([]*Tree, 0, len(e.trees))
	for id, t := range e.trees {
		if id != RootTreeID {
			trees = append(trees, t)
		}
	}
	e.treesMu.RUnlock()
	rootTree := e.trees[RootTreeID]
	changed := false
	for _, t := range trees {
		r := t.rootAt(tr.id)
		if r == nil {
			continue // created by a later transaction
		}
		ref := rootRef{bytenr: r.bytenr, level: r.Level(), generation: r.Generation()}
		last, ok := pending[t.id]
		if !ok {
			last = t.committedRoot
		}
		if ref == last {
			continue
		}
		item := make([]byte, rootItemSize)
		encodeRootItem(item, ref)
		key := Key{t.id, TypeRootItem, 0}
		err := rootTree.UpdateItem(tr, key, func(b []byte) { copy(b, item) })
		if err == ErrNotFound {
			err = rootTree.InsertItem(tr, key, item)
		}
		if err != nil {
			return false, err
		}
		pending[t.id] = ref
		changed = true
	}
	return changed, nil
}

// fail makes the engine read-only with err as the reason.
func (e *Engine) fail(err error) error {
	wrapped := fmt.Errorf("%w: %w", ErrReadOnly, err)
	if e.failed.CompareAndSwap(nil, &wrapped) {
		e.log.Error("engine: a commit or log sync failed; read-only", "err", err)
	}
	return wrapped
}

// nodeWrites turns nodes into device writes, one per node from its own
// buffer. A commit's nodes are mostly contiguous (the metadata cursor), and
// the device makes one request of adjacent writes in a batch (uringdev: a
// writev of up to 64 IOs; sysdev: a pwritev), so a 10,000-node commit is a
// few hundred requests, not 10,051 as it was before either merged. The
// nodes' buffers are not touched until the write is durable: a dirty node is
// never changed in place by a later transaction (it CoWs) nor evicted.
// (Commits used to copy runs of adjacent nodes into 1 MiB buffers: under the
// insert benchmark that copy and its allocation were a tenth of the
// engine's CPU, and the device merges the writes anyway.)
func (e *Engine) nodeWrites(nodes []*ExtentBuffer) []dev.IO {
	ios := make([]dev.IO, len(nodes), len(nodes)+1)
	for i, eb := range nodes {
		ios[i] = dev.IO{Off: int64(eb.bytenr), Buf: eb.data}
	}
	return ios
}

// commitPhases times a commit's phases, one child span of the commit span
// and one histogram observation each.
type commitPhases struct {
	ctx   context.Context
	tid   journal.Transid // the transaction, for the phase markers
	name  string
	began time.Time
	span  trace.Span
}

func newCommitPhases(ctx context.Context, tid journal.Transid) *commitPhases {
	return &commitPhases{ctx: ctx, tid: tid}
}

// begin ends the current phase, if any, and starts the next.
func (p *commitPhases) begin(name string, attrs ...attribute.KeyValue) {
	p.end()
	p.name, p.began = name, time.Now()
	_, p.span = trace.Start(p.ctx, name, attrs...)
	trace.PhaseBegin(uint64(p.tid), trace.PhaseByName(name), p.span.Key())
}

// end ends the current phase.
func (p *commitPhases) end() {
	if p.name == "" {
		return
	}
	trace.PhaseEnd(uint64(p.tid), trace.PhaseByName(p.name))
	p.span.End()
	trace.RecordCommitPhase(p.name, time.Since(p.began))
	p.name = ""
}
