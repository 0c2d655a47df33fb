package engine

import (
	"crypto/rand"
	"fmt"

	"ustore/dev"
	"ustore/journal"
)

// The log chain's other ends: the head a commit allocates and mount
// claims, and replay's walk from it.

// logChainMax bounds a chain walk: one record per log sync, and a
// transaction has at most LogSubMax of them.
const logChainMax = LogSubMax + 1

// LogDeltaRunMax bounds the delta records in a row after a checkpoint (the
// log writes a checkpoint sooner): replay holds their payloads in memory,
// and a chain with more ends before the one past the bound.
const LogDeltaRunMax = 1024

// newLogChain allocates the head of transaction tid's log chain and its
// id, for the superblock of tid-1's commit (e.commitMu held). No block
// (a full device) gives no chain: tid's fsyncs commit instead.
func (e *Engine) newLogChain(tid journal.Transid) (Bytenr, uint64) {
	head, err := e.alloc.allocLog(uint64(e.geo.nodeSize), true)
	if err != nil {
		e.log.Warn("engine: no block for the next log chain; fsyncs commit until the next commit", "transid", tid, "err", err)
		return 0, 0
	}
	id := newChainID()
	e.adoptLogChain(tid, head, id)
	return head, id
}

// newChainID is a random nonzero chain id.
func newChainID() uint64 {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			panic(err) // crypto/rand does not fail on Linux
		}
		if id := le.Uint64(b[:]); id != 0 {
			return id
		}
	}
}

// adoptLogChain makes head (taken from the free space) the chain head of
// tid's log.
func (e *Engine) adoptLogChain(tid journal.Transid, head Bytenr, id uint64) {
	e.logMu.Lock()
	defer e.logMu.Unlock()
	st := e.logStateLocked(tid)
	st.chainID, st.chainNext = id, head
	st.chain = append(st.chain, head)
}

// claimLogChainHead takes the mounted superblock's chain head out of the
// free space (the free space tree counts it free, as every log block) for
// the running transaction's log; mount calls it before anything
// allocates.
func (e *Engine) claimLogChainHead() error {
	if e.sb.LogChain == 0 {
		return nil
	}
	if err := e.alloc.claim(uint64(e.sb.LogChain), uint64(e.geo.nodeSize)); err != nil {
		return fmt.Errorf("engine: log chain head %d: %w", e.sb.LogChain, err)
	}
	e.adoptLogChain(e.sb.Generation+1, e.sb.LogChain, e.sb.ChainID)
	return nil
}

// LogCandidate is a log that replay may apply: the one the chain's newest
// record describes, or the one before.
type LogCandidate struct {
	// Tree is the last checkpoint's log tree (nil before the first), once
	// CheckLog has read it; Deltas are the payloads of the delta records
	// after that checkpoint up to this record, in chain order, to apply
	// over it.
	Tree   *Tree
	Deltas [][]byte
	Gen    LogGen // the log generation of the sync that wrote it
	Seq    uint64 // its record's sequence
	rec    chainRecord
	// prevRootGen is the generation of the root the record before named:
	// a checkpoint's digest covers the nodes above it.
	prevRootGen Generation
	chain       []Bytenr // the chain's blocks up to and including this record's, head excluded
	blocks      []Bytenr // the tree's nodes, once CheckLog has read them
	checked     bool     // by CheckLog
}

// chainHead is what the first record of the chain the mounted superblock
// names must be: at its head block, of its chain id, for the transaction
// after the superblock's, sequence 1.
func (e *Engine) chainHead() chainExpect {
	return chainExpect{bytenr: e.sb.LogChain, id: e.sb.ChainID, transid: e.sb.Generation + 1, seq: 1}
}

// ReplayLog walks the log chain the mounted superblock names and returns
// what replay may apply: the newest record's log, then the one before it
// (none, one or two). The newest may be a sync that never completed (its
// record durable, some of its nodes or data not); the one before was
// durable before that sync began, and its blocks intact until that sync
// had flushed. An error is a failed read: where the chain ends is unknown.
func (e *Engine) ReplayLog() ([]*LogCandidate, error) {
	if e.sb.LogChain == 0 {
		return nil, nil
	}
	want := e.chainHead()
	var recs []chainRecord
	// run is the payloads the last record's log applies over its
	// checkpoint, prevRun the record before's (a delta's run is its
	// predecessor's plus its own payload; a checkpoint's is empty).
	var run, prevRun [][]byte
	seen := map[Bytenr]bool{}
	for len(recs) < logChainMax && !seen[want.bytenr] {
		seen[want.bytenr] = true
		r, payload, ok, err := e.readChainRecord(want)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if r.delta && len(run) >= LogDeltaRunMax {
			e.log.Debug("engine: the log chain ends", "block", want.bytenr, "seq", want.seq, "why", "too many deltas in a row")
			break
		}
		prevRun = run // appends to run leave prevRun's elements as they are
		if r.delta {
			run = append(run, payload)
		} else {
			run = nil
		}
		recs = append(recs, r)
		want = chainExpect{bytenr: r.next, id: r.id, transid: r.transid, seq: r.seq + 1, prevGen: r.gen, prevRoot: r.root}
	}
	var cands []*LogCandidate
	for i := len(recs) - 1; i >= 0 && i >= len(recs)-2; i-- {
		c := &LogCandidate{Gen: recs[i].gen, Seq: recs[i].seq, rec: recs[i], Deltas: run}
		if i < len(recs)-1 {
			c.Deltas = prevRun
		}
		if i > 0 {
			c.prevRootGen = recs[i-1].root.generation
		}
		for _, r := range recs[1 : i+1] {
			c.chain = append(c.chain, r.bytenr)
		}
		cands = append(cands, c)
	}
	return cands, nil
}

// CheckLog reads every node of c's log tree (each read verifies its
// checksum, and each child its generation) and checks the digest of its
// record: a tree whose sync did not complete fails here. A log with no
// checkpoint yet has no tree: its deltas are all of it.
func (e *Engine) CheckLog(c *LogCandidate) error {
	if c.rec.root == (rootRef{}) {
		c.checked = true
		return nil
	}
	root, err := e.readNode(c.rec.root.bytenr, LogTreeID, c.rec.root.level)
	if err != nil {
		return err
	}
	if root.Generation() != c.rec.root.generation {
		return fmt.Errorf("%w: log root generation %d, its record says %d", ErrCorruption, root.Generation(), c.rec.root.generation)
	}
	t := e.newLogTree()
	t.root = root
	var blocks []Bytenr
	var walk func(eb *ExtentBuffer, depth int) error
	walk = func(eb *ExtentBuffer, depth int) error {
		if depth > maxLevel {
			return fmt.Errorf("%w: log tree deeper than %d", ErrCorruption, maxLevel)
		}
		blocks = append(blocks, eb.bytenr)
		if eb.IsLeaf() {
			return nil
		}
		for i := range eb.ItemCount() {
			child, err := e.readChild(t, eb, i)
			if err != nil {
				return err
			}
			if err := walk(child, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root, 0); err != nil {
		return err
	}
	// Every node reached is verified; the digest says they are the ones
	// this record's sync wrote, not older nodes of the same generation.
	digest, err := e.logDigest(t, root, c.prevRootGen)
	if err != nil {
		return err
	}
	if digest != c.rec.digest {
		return fmt.Errorf("%w: log chain record %d: the log nodes it names are not the ones its sync wrote (digest %#x, record %#x)",
			ErrCorruption, c.Seq, digest, c.rec.digest)
	}
	c.Tree, c.blocks, c.checked = t, blocks, true
	return nil
}

// ClaimLog takes the blocks of c's tree (checked by CheckLog) and of the
// chain up to its record out of the free space until tr is durable: the
// free space tree of the last commit counts them free, and a crash during
// replay must find the same log again.
func (e *Engine) ClaimLog(tr *Trans, c *LogCandidate) error {
	if !c.checked {
		return fmt.Errorf("engine: ClaimLog: log %s not checked", c.Gen)
	}
	ns := uint64(e.geo.nodeSize)
	for _, b := range c.blocks {
		if err := e.alloc.claim(uint64(b), ns); err != nil {
			return fmt.Errorf("engine: log node %d: %w", b, err)
		}
	}
	for _, b := range c.chain {
		if err := e.alloc.claim(uint64(b), ns); err != nil {
			return fmt.Errorf("engine: log chain block %d: %w", b, err)
		}
	}
	e.logMu.Lock()
	st := e.logStateLocked(tr.ID())
	for _, b := range c.blocks {
		st.blocks[b] = struct{}{}
	}
	st.chain = append(st.chain, c.chain...)
	e.logMu.Unlock()
	return nil
}

// VerifyData reads the data blocks from start, one per checksum in sums
// (CsumSize bytes each), and checks each against its checksum: replay
// verifies the data a log maps, written unflushed beside its record.
func (e *Engine) VerifyData(start Bytenr, sums []byte) error {
	const chunkBlocks = 64
	n := len(sums) / CsumSize
	if start < firstAllocatable || start%SectorSize != 0 || uint64(start)+uint64(n)*SectorSize > e.sb.TotalBytes {
		return fmt.Errorf("%w: logged data [%d, +%d blocks) outside the device", ErrCorruption, start, n)
	}
	for i := 0; i < n; i += chunkBlocks {
		k := min(chunkBlocks, n-i)
		buf := dev.AlignedBuffer(k * SectorSize)
		at := start + Bytenr(i)*SectorSize
		if err := e.dev.Read([]dev.IO{{Off: int64(at), Buf: buf}}); err != nil {
			return fmt.Errorf("engine: reading logged data at %d: %w", at, err)
		}
		for j := range k {
			got := DataCsum(buf[j*SectorSize : (j+1)*SectorSize])
			if want := le.Uint32(sums[(i+j)*CsumSize:]); got != want {
				return fmt.Errorf("%w: logged data block %d: checksum %#x, logged %#x", ErrCorruption, at+Bytenr(j)*SectorSize, got, want)
			}
		}
	}
	return nil
}

// PendingLog returns the log generation of the first record of the log
// chain the mounted superblock names, if it holds one: a read-only mount
// cannot replay it.
func (e *Engine) PendingLog() (gen LogGen, ok bool) {
	if e.sb.LogChain == 0 {
		return 0, false
	}
	r, _, ok, err := e.readChainRecord(e.chainHead())
	if err != nil {
		return 0, true // unreadable: there may be one
	}
	return r.gen, ok
}

// logHeldBytes is the space every log holds outside the free space tree:
// its nodes and its chain blocks.
func (e *Engine) logHeldBytes() uint64 {
	e.logMu.Lock()
	defer e.logMu.Unlock()
	n := 0
	for _, st := range e.logs {
		n += len(st.blocks) + len(st.chain)
	}
	return uint64(n) * uint64(e.geo.nodeSize)
}
