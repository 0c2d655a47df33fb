package engine

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"ustore/dev"
	"ustore/trace"
)

// commit writes transaction tid to disk. The journal calls it once every
// handle of tid has ended, while tid+1 may already run: tid's nodes are then
// immutable (tid+1 CoWs them before any change), and the trees touched here
// — the root tree and the free space tree — change only in commits.
//
//  1. Root items and the free space tree, until both stop changing (updating
//     one allocates for the other).
//  2. Every dirty node of tid, checksummed, in large batches; flush.
//  3. The superblock (sequence +1, slot by sequence) and its mirror; flush.
//
// An error leaves the previous superblock the newest durable one and the
// engine read-only.
func (e *Engine) commit(ctx context.Context, tid uint64) error {
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	if err := e.failure(); err != nil {
		return err
	}
	start := time.Now()
	ctx, span := trace.Start(ctx, "journal.commit", trace.Transid(tid))
	defer span.End()
	trace.PhaseBegin(tid, trace.PhaseCommit, span.Key()) // for eBPF; ended by the defer below
	defer trace.PhaseEnd(tid, trace.PhaseCommit)
	phase := newCommitPhases(ctx, tid)
	defer phase.end()
	phase.begin("update_roots")
	tr := &Trans{id: tid, e: e, commit: true}
	used := int64(e.usedBytes)
	pendingRoots := map[uint64]rootRef{}
	for round := 0; ; round++ {
		if round > 64 {
			return e.fail(fmt.Errorf("engine: commit %d: root items and free space did not converge", tid))
		}
		changed, err := e.updateRootItems(tr, pendingRoots)
		if err != nil {
			return e.fail(err)
		}
		if d := e.alloc.takeDelta(tid); d != nil {
			delta, err := e.applyDelta(tr, d)
			if err != nil {
				return e.fail(err)
			}
			used += delta
			changed = true
		}
		if !changed {
			break
		}
	}
	tUpdates := time.Since(start)
	e.checkCommitInvariants(tid)

	nodes := e.takeDirty(tid)
	for _, eb := range nodes {
		// The write lock orders the checksum store after any reader's
		// copy (a CoW by tid+1 reads the node under its lock).
		eb.lock.Lock()
		eb.seal()
		eb.lock.Unlock()
	}
	ios := e.nodeWrites(nodes)
	rootTree := e.trees[RootTreeID]
	r := rootTree.rootAt(tid)
	sb := e.sb
	sb.Seq++
	sb.Bytenr = slotOffset(sb.Seq)
	sb.Generation = tid
	sb.Root = rootRef{bytenr: r.bytenr, level: r.Level(), generation: r.Generation()}
	sb.BytesUsed = uint64(used)
	// tid's log, if any, is unnecessary once this superblock is durable.
	sb.LogRoot, sb.LogTransid = rootRef{}, 0
	tWrite := time.Now()
	// Three steps, not one WriteDurable of two stages, so that each phase
	// is timed and traced on its own; the device sees the same sequence:
	// the nodes in parallel, a flush, the superblock, a flush.
	written := 0
	for _, io := range ios {
		written += len(io.Buf)
	}
	phase.begin("write_nodes", trace.Nodes(len(nodes)), trace.Bytes(int64(written)))
	err := e.dev.Write(ios)
	if err == nil {
		phase.begin("flush")
		err = e.dev.Flush()
	}
	if err == nil {
		phase.begin("super")
		err = e.dev.WriteDurable(superWrites(sb))
	}
	phase.end()
	if err != nil {
		span.RecordError(err)
		return e.fail(fmt.Errorf("engine: commit %d: %w", tid, err))
	}
	span.SetAttributes(trace.Nodes(len(nodes)), trace.Bytes(int64(written)))
	trace.RecordCommit(time.Since(start))
	for _, eb := range nodes {
		eb.dirty.Store(false)
	}
	// The nodes are clean now, so evictable: bring the cache back to budget.
	e.cache.Shrink()
	e.sb = sb
	e.usedBytes = uint64(used)
	for id, ref := range pendingRoots {
		e.trees[id].committedRoot = ref
	}
	rootTree.committedRoot = sb.Root
	e.treesMu.RLock()
	for _, t := range e.trees {
		t.forgetRootsBefore(tid)
	}
	e.treesMu.RUnlock()
	e.stats.commits.Add(1)
	e.stats.nodesWritten.Add(uint64(len(nodes)))
	e.log.Debug("engine: committed", "transid", tid, "nodes", len(nodes), "updates", tUpdates,
		"write", time.Since(tWrite), "took", time.Since(start))
	return nil
}

// committed runs after the journal published tid: the space tid freed is
// reusable now.
func (e *Engine) committed(tid uint64) {
	if err := e.alloc.unpin(tid); err != nil {
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

// nodeWrites turns nodes (in bytenr order) into device writes, gathering
// runs of adjacent nodes into one write of up to commitWriteMax bytes: the
// metadata cursor keeps a commit's nodes mostly contiguous, and a few large
// writes cost the device far less than thousands of node-sized ones
// (measured: a 10,000-node commit went out as 10,051 writes of 16 KiB). The
// copy into the run's buffer is cheap next to the write.
func (e *Engine) nodeWrites(nodes []*ExtentBuffer) []dev.IO {
	ns := uint64(e.geo.nodeSize)
	perRun := max(1, commitWriteMax/int(ns))
	var ios []dev.IO
	for i := 0; i < len(nodes); {
		j := i + 1
		for j < len(nodes) && j-i < perRun && nodes[j].bytenr == nodes[j-1].bytenr+ns {
			j++
		}
		if j == i+1 {
			ios = append(ios, dev.IO{Off: int64(nodes[i].bytenr), Buf: nodes[i].data})
		} else {
			buf := dev.AlignedBuffer((j - i) * int(ns))
			for k := i; k < j; k++ {
				copy(buf[(k-i)*int(ns):], nodes[k].data)
			}
			ios = append(ios, dev.IO{Off: int64(nodes[i].bytenr), Buf: buf})
		}
		i = j
	}
	return ios
}

// commitPhases times a commit's phases, one child span of the commit span
// and one histogram observation each.
type commitPhases struct {
	ctx   context.Context
	tid   uint64 // the transaction, for the phase markers
	name  string
	began time.Time
	span  trace.Span
}

func newCommitPhases(ctx context.Context, tid uint64) *commitPhases {
	return &commitPhases{ctx: ctx, tid: tid}
}

// begin ends the current phase, if any, and starts the next.
func (p *commitPhases) begin(name string, attrs ...attribute.KeyValue) {
	p.end()
	p.name, p.began = name, time.Now()
	_, p.span = trace.Start(p.ctx, name, attrs...)
	trace.PhaseBegin(p.tid, trace.PhaseByName(name), p.span.Key())
}

// end ends the current phase.
func (p *commitPhases) end() {
	if p.name == "" {
		return
	}
	trace.PhaseEnd(p.tid, trace.PhaseByName(p.name))
	p.span.End()
	trace.RecordCommitPhase(p.name, time.Since(p.began))
	p.name = ""
}
