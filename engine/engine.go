package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"ustore/dev"
	"ustore/evict"
	"ustore/journal"
	"ustore/lock"
)

// Options configure Mount.
type Options struct {
	// CacheBytes is the node cache budget (default 256 MiB). Dirty nodes are
	// pinned and may take it over budget until their commit.
	CacheBytes int64
	// CacheBudget, when set, is a budget the node cache shares with other
	// caches (the store's data pages), in place of CacheBytes.
	CacheBudget *evict.Budget
	// CommitInterval: see journal.Options (default 5 s).
	CommitInterval time.Duration
	// DirtyBytesMax: dirty metadata that triggers a commit (default 64 MiB).
	DirtyBytesMax int64
	Logger        *slog.Logger
	// Ablations: see journal.Ablations (for benchmarks; passed to the
	// journal).
	journal.Ablations
	// ReadOnly mounts for reading only: nothing is ever written
	// (read_only.go).
	ReadOnly bool
	// NoLeafPush splits every full leaf without first trying to move
	// items into a sibling (push.go): an ablation, for benchmarks.
	NoLeafPush bool
}

// Engine is a mounted filesystem of B-trees on one device.
//
// Concurrency: trees, the allocator, the cache and the journal are safe for
// concurrent use. commitMu serialises commits (the journal runs one at a
// time anyway; the mutex guards sb and usedBytes). dirtyMu guards dirty.
type Engine struct {
	dev   dev.Device
	geo   geometry
	fsid  [16]byte
	log   *slog.Logger
	cache *evict.Cache[*ExtentBuffer]
	alloc *allocator
	j     *journal.Journal

	treesMu sync.RWMutex
	trees   map[uint64]*Tree

	dirtyMu sync.Mutex
	dirty   map[Generation]map[Bytenr]*ExtentBuffer // generation → bytenr → node

	commitMu  sync.Mutex
	sb        Superblock  // the newest durable superblock
	super     superChoice // how mount chose its superblock; set once, read by fsck
	usedBytes uint64      // allocated bytes as of sb

	// logMu guards logs; logRootMu serialises making a log tree's root.
	logMu     sync.Mutex
	logRootMu sync.Mutex
	logs      map[journal.Transid]*logState // transaction → its log
	logTree   *Tree                         // the template: lock classes and counters every log tree shares

	failed   atomic.Pointer[error]
	stats    engineStats
	readOnly bool // Options.ReadOnly: Start refuses (read_only.go)
	// noLeafPush is Options.NoLeafPush: splits without pushes (push.go).
	noLeafPush bool
}

// Trans is a handle on the running transaction: every change to a tree is
// made under one, and carries its id as the generation.
type Trans struct {
	id     Generation
	h      *journal.Handle
	e      *Engine
	commit bool // the commit's own changes (root items, free space tree)
	// reserved: started by StartReserved; node allocations may use the
	// metadata reserve.
	reserved bool
	// log: a handle on a transaction's log tree (LogTrans); its id is a
	// log generation.
	log *logState
}

// ID is the transaction id (the generation of nodes it writes). A log
// handle (LogTrans) writes log nodes: its id is their LogGen.
func (tr *Trans) ID() journal.Transid { return journal.Transid(tr.id) }

// End releases the handle; the transaction may then commit.
func (tr *Trans) End() {
	if tr.h != nil {
		tr.h.End()
		tr.h = nil
	}
}

// Start joins the running transaction.
func (e *Engine) Start() (*Trans, error) {
	return e.start(true)
}

// start is Start; without wait, journal.ErrWouldWait (wrapped) where the
// journal would wait for the committing transaction to freeze.
func (e *Engine) start(wait bool) (*Trans, error) {
	if err := e.checkWritable(); err != nil {
		return nil, err
	}
	if err := e.failure(); err != nil {
		return nil, err
	}
	start := e.j.Start
	if !wait {
		start = e.j.TryStart
	}
	h, err := start()
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	return &Trans{id: TransGeneration(h.Transid()), h: h, e: e}, nil
}

// Commit commits the running transaction and waits until it is durable.
func (e *Engine) Commit(ctx context.Context) (journal.Transid, error) {
	return e.j.CommitNow(ctx)
}

// WaitCommitted returns once transaction tid is durable, the engine has
// failed, or ctx is done.
func (e *Engine) WaitCommitted(ctx context.Context, tid journal.Transid) error {
	return e.j.WaitCommitted(ctx, tid)
}

// Committed reports whether transaction tid is durable: one atomic load.
func (e *Engine) Committed(tid journal.Transid) bool { return e.j.Committed(tid) }

// Tree returns the tree with id, or nil.
func (e *Engine) Tree(id uint64) *Tree {
	e.treesMu.RLock()
	defer e.treesMu.RUnlock()
	return e.trees[id]
}

// CreateTree creates an empty tree in transaction tr; its root item is
// written at commit.
func (e *Engine) CreateTree(tr *Trans, id uint64) (*Tree, error) {
	e.treesMu.Lock()
	defer e.treesMu.Unlock()
	if _, ok := e.trees[id]; ok || id == RootTreeID || id == FreeSpaceTreeID {
		return nil, fmt.Errorf("%w: tree %d", ErrExists, id)
	}
	t := newTree(e, id)
	root, err := e.newNode(tr, t, 0, false)
	if err != nil {
		return nil, err
	}
	root.lock.Unlock()
	t.root = root
	e.trees[id] = t
	return t, nil
}

// NodeSize is the size of every tree node.
func (e *Engine) NodeSize() int { return e.geo.nodeSize }

// ItemDataMax is the largest item payload.
func (e *Engine) ItemDataMax() int { return e.geo.itemDataMax }

// Device returns the engine's device.
func (e *Engine) Device() dev.Device { return e.dev }

func (e *Engine) failure() error {
	if p := e.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// addDirty records a node born in transaction tid, and counts it toward
// the journal's dirty-bytes trigger.
func (e *Engine) addDirty(tid Generation, eb *ExtentBuffer) {
	e.trackDirty(tid, eb)
	if e.j != nil {
		e.j.AddDirty(int64(e.geo.nodeSize))
	}
}

// trackDirty records a node born in tid (a transaction or a log
// generation) among the nodes to write.
func (e *Engine) trackDirty(tid Generation, eb *ExtentBuffer) {
	e.dirtyMu.Lock()
	m := e.dirty[tid]
	if m == nil {
		m = map[Bytenr]*ExtentBuffer{}
		e.dirty[tid] = m
	}
	m[eb.bytenr] = eb
	e.dirtyMu.Unlock()
}

func (e *Engine) removeDirty(tid Generation, eb *ExtentBuffer) {
	e.dirtyMu.Lock()
	delete(e.dirty[tid], eb.bytenr)
	e.dirtyMu.Unlock()
}

// takeDirty returns transaction tid's dirty nodes in bytenr order.
func (e *Engine) takeDirty(tid Generation) []*ExtentBuffer {
	e.dirtyMu.Lock()
	m := e.dirty[tid]
	delete(e.dirty, tid)
	e.dirtyMu.Unlock()
	nodes := make([]*ExtentBuffer, 0, len(m))
	for _, eb := range m {
		nodes = append(nodes, eb)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].bytenr < nodes[j].bytenr })
	return nodes
}

// readChild returns child slot of parent, checking that it is what the
// parent points at: its generation, owner and level.
func (e *Engine) readChild(t *Tree, parent *ExtentBuffer, slot int) (*ExtentBuffer, error) {
	eb, err := e.readNode(parent.BlockPtr(slot), t.id, parent.Level()-1)
	if err != nil {
		return nil, err
	}
	if g := parent.PtrGeneration(slot); eb.Generation() != g {
		return nil, fmt.Errorf("%w: node %d: generation %d, parent %d expects %d", ErrCorruption, eb.bytenr, eb.Generation(), parent.bytenr, g)
	}
	return eb, nil
}

// readNode returns the node at bytenr from the cache, or reads and verifies
// it (checksum, fsid, bytenr, owner, level) on a miss.
func (e *Engine) readNode(bytenr Bytenr, owner uint64, level int) (*ExtentBuffer, error) {
	if bytenr < firstAllocatable || uint64(bytenr)+uint64(e.geo.nodeSize) > uint64(e.dev.Size()) || bytenr%SectorSize != 0 {
		return nil, fmt.Errorf("%w: node pointer %d outside the device", ErrCorruption, bytenr)
	}
	eb, err := e.cache.GetOrLoad(uint64(bytenr), func() (*ExtentBuffer, error) {
		buf := alignedNode(e.geo.nodeSize)
		ios := []dev.IO{{Off: int64(bytenr), Buf: buf}}
		if err := e.dev.Read(ios); err != nil {
			return nil, fmt.Errorf("engine: reading node %d: %w", bytenr, err)
		}
		var class *lock.Class // the level is checked by verify below
		t := e.Tree(owner)
		if owner == LogTreeID {
			t = e.logTree
		}
		if t != nil && level >= 0 && level <= maxLevel {
			class = t.classes[level]
		}
		eb := newExtentBuffer(bytenr, buf, class)
		if err := eb.verify(e.fsid, owner, level, e.geo.nodeSize); err != nil {
			e.stats.corrupt.Add(1)
			e.log.Error("corrupt tree node", "bytenr", bytenr, "tree", owner, "err", err)
			return nil, err
		}
		e.stats.nodeReads.Add(1)
		return eb, nil
	})
	if err != nil {
		return nil, err
	}
	if eb.Owner() != owner || eb.Level() != level {
		return nil, fmt.Errorf("%w: node %d: owner %d level %d, expected %d/%d", ErrCorruption, bytenr, eb.Owner(), eb.Level(), owner, level)
	}
	return eb, nil
}

func alignedNode(n int) []byte { return dev.AlignedBuffer(n) }

// Close commits what is running, waits for it, and stops the journal.
func (e *Engine) Close(ctx context.Context) error {
	err := e.j.Close(ctx)
	if cerr := e.failure(); err == nil && cerr != nil && !errors.Is(err, cerr) {
		err = cerr
	}
	e.cache.Clear()
	return err
}

// ReserveData takes length bytes (a positive multiple of SectorSize) of
// contiguous data space out of the free space, from the data cursor so file
// data stays clustered apart from metadata, without a transaction: no
// commit records it until UseData does. Writeback reserves and writes its
// data with no handle held, then references it in a transaction: a crash
// before that loses nothing (the space was never recorded as used), and no
// commit waits for the data I/O. The caller must UseData or UnreserveData
// it.
func (e *Engine) ReserveData(length uint64) (Bytenr, error) {
	if length == 0 || length%SectorSize != 0 {
		return 0, fmt.Errorf("engine: data allocation of %d bytes: not a positive multiple of %d", length, SectorSize)
	}
	start, err := e.alloc.reserveData(length)
	return Bytenr(start), err
}

// UseData records reserved data space as allocated in transaction tr, whose
// items now reference it.
func (e *Engine) UseData(tr *Trans, start Bytenr, length uint64) {
	e.alloc.useData(tr.id, uint64(start), length)
}

// UnreserveData gives reserved, unused data space back.
func (e *Engine) UnreserveData(start Bytenr, length uint64) error {
	return e.alloc.unreserveData(uint64(start), length)
}

// FreeData frees data space in transaction tr; it is reusable once tr is
// durable.
func (e *Engine) FreeData(tr *Trans, start Bytenr, length uint64) {
	e.alloc.free(tr.id, uint64(start), length)
}
