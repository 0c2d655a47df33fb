package engine

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"time"

	"ustore/dev"
	"ustore/evict"
	"ustore/journal"
)

// MkfsOptions configure Mkfs.
type MkfsOptions struct {
	NodeSize int // default NodeSizeDefault
}

// MinDeviceSize is the smallest device Mkfs formats with nodes of
// nodeSize bytes: the reserved first MiB (superblocks) and room for 64
// nodes.
func MinDeviceSize(nodeSize int) uint64 { return firstAllocatable + 64*uint64(nodeSize) }

// Mkfs formats the device: a root tree holding the root items of the fs,
// checksum and free space trees, all empty but the free space tree, which
// holds one extent: everything after the four initial nodes. Generation 1,
// sequence 1; the log chain of transaction 2 starts in the first free block.
func Mkfs(d dev.Device, opts MkfsOptions) error {
	ns := opts.NodeSize
	if ns == 0 {
		ns = NodeSizeDefault
	}
	if ns < NodeSizeMin || ns > NodeSizeMax || ns&(ns-1) != 0 {
		return fmt.Errorf("engine: node size %d: must be a power of two from %d to %d", ns, NodeSizeMin, NodeSizeMax)
	}
	size := uint64(d.Size()) / uint64(ns) * uint64(ns)
	if size < MinDeviceSize(ns) {
		return fmt.Errorf("engine: device of %d bytes is too small (at least %d)", d.Size(), MinDeviceSize(ns))
	}
	var fsid [16]byte
	if _, err := rand.Read(fsid[:]); err != nil {
		return err
	}
	const gen = 1
	ids := []uint64{RootTreeID, FSTreeID, CsumTreeID, FreeSpaceTreeID}
	nodes := map[uint64]*ExtentBuffer{}
	var ios []dev.IO
	for i, id := range ids {
		eb := newExtentBuffer(Bytenr(firstAllocatable+uint64(i*ns)), alignedNode(ns), nil)
		eb.initHeader(fsid, gen, id, 0)
		nodes[id] = eb
	}
	for i, id := range ids[1:] {
		item := make([]byte, rootItemSize)
		encodeRootItem(item, rootRef{bytenr: nodes[id].bytenr, generation: gen})
		leafAppend(nodes[RootTreeID], Key{id, TypeRootItem, 0}, item)
		_ = i
	}
	freeStart := firstAllocatable + uint64(len(ids)*ns)
	leafAppend(nodes[FreeSpaceTreeID], fstKey(freeStart, size-freeStart), nil)
	// The head of transaction 2's log chain: a free block, as every chain
	// head is (mount claims it). Nothing was ever written there by this
	// filesystem, and a record must carry the random chain id.
	head := Bytenr(freeStart)
	for _, id := range ids {
		nodes[id].seal()
		ios = append(ios, dev.IO{Off: int64(nodes[id].bytenr), Buf: nodes[id].data})
	}
	sb := Superblock{
		Fsid: fsid, Bytenr: slotOffset(1), Version: FormatVersion, Seq: 1, Generation: gen,
		Root: rootRef{bytenr: nodes[RootTreeID].bytenr, generation: gen}, TotalBytes: size,
		BytesUsed: uint64(len(ids) * ns), NodeSize: uint32(ns), SectorSize: SectorSize,
		CsumType: CsumCRC32C, NextIno: FirstFreeIno, LogChain: head, ChainID: newChainID(),
	}
	// Both copies of the other slot are zeroed first: a superblock left by
	// an earlier format must never be mounted.
	for _, off := range slotCopies(0) {
		ios = append(ios, dev.IO{Off: int64(off), Buf: dev.AlignedBuffer(superSize)})
	}
	return d.WriteDurable(ios, superWrites(sb))
}

// leafAppend appends an item to a leaf being built by hand (mkfs).
func leafAppend(eb *ExtentBuffer, k Key, data []byte) {
	n := eb.ItemCount()
	lo, hi := eb.leafMakeRoom(n, []Key{k}, []uint32{uint32(len(data))}, len(data))
	copy(eb.data[lo:hi], data)
}

// ROOT_ITEM payload: bytenr u64, level u8 (+7), generation u64.
const rootItemSize = 24

func encodeRootItem(b []byte, r rootRef) { putRootRef(b, r) }
func decodeRootItem(b []byte) (rootRef, error) {
	if len(b) != rootItemSize {
		return rootRef{}, fmt.Errorf("%w: root item of %d bytes", ErrCorruption, len(b))
	}
	r := getRootRef(b)
	if r.level > maxLevel {
		return r, fmt.Errorf("%w: root item level %d", ErrCorruption, r.level)
	}
	return r, nil
}

// Mount opens the filesystem on d at its newest valid superblock.
func Mount(d dev.Device, opts Options) (*Engine, error) {
	start := time.Now()
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	choice, err := chooseSuperblock(readSuperCopies(d))
	if err != nil {
		return nil, err
	}
	sb := choice.sb
	// Said before anything else can fail: a mount that fell back to an
	// older superblock may then fail on trees the newer one freed.
	for _, err := range choice.damage {
		log.Warn("engine: damaged superblock copy", "err", err)
	}
	if choice.lost != nil {
		log.Warn("engine: MOUNTED AN OLDER SUPERBLOCK; acknowledged state may be lost (fsck fails until a new superblock is written)", "err", choice.lost)
	}
	if sb.TotalBytes > uint64(d.Size()) {
		return nil, fmt.Errorf("engine: filesystem of %d bytes on a device of %d", sb.TotalBytes, d.Size())
	}
	cacheOpts := evict.Options{Budget: opts.CacheBudget}
	if opts.CacheBudget == nil {
		cacheOpts.BudgetBytes = opts.CacheBytes
		if cacheOpts.BudgetBytes == 0 {
			cacheOpts.BudgetBytes = 256 << 20
		}
	}
	e := &Engine{
		dev: d, geo: newGeometry(int(sb.NodeSize)), fsid: sb.Fsid, log: log,
		cache: evict.New[*ExtentBuffer](cacheOpts),
		alloc: newAllocator(sb.TotalBytes, uint64(sb.NodeSize)), trees: map[uint64]*Tree{},
		dirty: map[Generation]map[Bytenr]*ExtentBuffer{}, sb: sb, usedBytes: sb.BytesUsed,
		logs: map[journal.Transid]*logState{}, super: choice, readOnly: opts.ReadOnly,
		noLeafPush: opts.NoLeafPush,
	}
	e.logTree = newTree(e, LogTreeID)
	rootTree := newTree(e, RootTreeID)
	e.trees[RootTreeID] = rootTree
	if rootTree.root, err = e.readNode(sb.Root.bytenr, RootTreeID, sb.Root.level); err != nil {
		return nil, fmt.Errorf("engine: mount: root tree: %w", err)
	}
	if rootTree.root.Generation() != sb.Root.generation {
		return nil, fmt.Errorf("%w: root tree root generation %d, superblock says %d", ErrCorruption, rootTree.root.Generation(), sb.Root.generation)
	}
	rootTree.committedRoot = sb.Root
	var refs []struct {
		id  uint64
		ref rootRef
	}
	var decodeErr error
	err = rootTree.Iterate(MinKey, func(k Key, data []byte) bool {
		if k.Type != TypeRootItem {
			return true
		}
		r, err := decodeRootItem(data)
		if err != nil {
			decodeErr = err
			return false
		}
		refs = append(refs, struct {
			id  uint64
			ref rootRef
		}{k.ObjectID, r})
		return true
	})
	if err == nil {
		err = decodeErr
	}
	if err != nil {
		return nil, fmt.Errorf("engine: mount: root items: %w", err)
	}
	for _, r := range refs {
		t := newTree(e, r.id)
		e.trees[r.id] = t
		if t.root, err = e.readNode(r.ref.bytenr, r.id, r.ref.level); err != nil {
			if skipTreeReadOnly(opts, r.id, err) {
				delete(e.trees, r.id)
				continue
			}
			return nil, fmt.Errorf("engine: mount: tree %d: %w", r.id, err)
		}
		t.committedRoot = r.ref
	}
	for _, id := range []uint64{FSTreeID, CsumTreeID, FreeSpaceTreeID} {
		if e.trees[id] == nil && !(opts.ReadOnly && id == FreeSpaceTreeID) {
			return nil, fmt.Errorf("%w: no root item for tree %d", ErrCorruption, id)
		}
	}
	// Only allocation needs the free space; a read-only mount skips it.
	if !opts.ReadOnly {
		if err := e.loadFreeSpace(); err != nil {
			return nil, fmt.Errorf("engine: mount: free space: %w", err)
		}
		if err := e.claimLogChainHead(); err != nil {
			return nil, fmt.Errorf("engine: mount: %w", err)
		}
	}
	// A read-only mount writes nothing, a repair included: the damaged
	// copy is reported (fsck), and the next read-write mount rewrites it.
	if !opts.ReadOnly {
		e.repairSuperCopies()
	}
	e.j, err = journal.Open(journal.Options{
		CommitInterval: opts.CommitInterval,
		DirtyBytesMax:  opts.DirtyBytesMax,
		Commit:         func(ctx context.Context, t journal.Transid) error { return e.commit(ctx, t) },
		Committed:      func(t journal.Transid) { e.committed(t) },
		Logger:         log,
		FirstTransid:   sb.Generation + 1,
		Ablations:      opts.Ablations,
	})
	if err != nil {
		return nil, err
	}
	log.Info("engine: mounted", "generation", sb.Generation, "seq", sb.Seq, "superblock", choice.from, "node_size", sb.NodeSize,
		"bytes", sb.TotalBytes, "used", sb.BytesUsed, "took", time.Since(start))
	return e, nil
}

// repairSuperCopies rewrites the twin of the mounted superblock when it is
// damaged or stale, so that the newest state has two copies again before
// anything else happens: the twin's slot is not written again until two
// more superblocks have been. The sound copy is untouched, so a crash during the
// rewrite changes nothing. A failed rewrite is reported, not fatal: the
// sound copy still mounts, and a read-only device can still be read.
func (e *Engine) repairSuperCopies() {
	ch := &e.super
	for _, off := range ch.repair {
		if err := e.dev.WriteDurable([]dev.IO{superCopyWrite(ch.sb, off)}); err != nil {
			e.log.Warn("engine: rewriting a damaged superblock copy failed; the newest superblock has one copy", "copy", off, "err", err)
			ch.damage = append(ch.damage, fmt.Errorf("superblock copy at %d: rewrite failed: %w", off, err))
			continue
		}
		e.log.Warn("engine: rewrote the damaged superblock copy from its twin", "copy", off, "seq", ch.sb.Seq, "twin", ch.from)
		ch.repaired = append(ch.repaired, off)
	}
}

// loadFreeSpace rebuilds the allocator's free extents from the free space
// tree.
func (e *Engine) loadFreeSpace() error {
	var bad error
	err := e.trees[FreeSpaceTreeID].Iterate(MinKey, func(k Key, _ []byte) bool {
		x, err := fstExtent(k)
		if err == nil && (x.start < firstAllocatable || x.end() > e.alloc.size) {
			err = fmt.Errorf("%w: free extent [%d, %d) outside the device", ErrCorruption, x.start, x.end())
		}
		if err == nil && !e.alloc.freeSet.add(x.start, x.length) {
			err = fmt.Errorf("%w: free extents overlap at %d", ErrCorruption, x.start)
		}
		bad = err
		return err == nil
	})
	if err != nil {
		return err
	}
	return bad
}
