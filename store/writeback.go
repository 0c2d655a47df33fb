package store

import (
	"errors"
	"slices"
	"sync"
	"time"

	"ustore/dev"
	"ustore/engine"
	"ustore/internal/assert"
)

// Writeback turns an inode's dirty pages into extents: it reserves
// contiguous runs of blocks, writes them through dev in batches, and then,
// in one transaction handle per batch, replaces the old extents of those
// ranges with the new ones and inserts their checksums. Ordered mode
// follows: a batch's items enter a transaction only after its data writes
// have completed, and that transaction's commit flushes before its
// superblock. Old blocks are freed in the same handle and reused only
// after that transaction is durable.

// wbChunkBytes bounds one writeback batch: its device writes go out as one
// submission, and the tree work that maps it is one short handle.
const wbChunkBytes = 8 << 20

// maxExtentBlocks is the longest extent: its checksum item (4 bytes a
// block) must fit in a leaf item.
func (s *Store) maxExtentBlocks() int {
	return min(256, s.e.ItemDataMax()/engine.CsumSize)
}

// writebackInode writes back every page of in that is dirty when it starts.
func (s *Store) writebackInode(in *inode) error {
	_, err := s.writebackInodeCounted(in)
	return err
}

// writebackInodeCounted is writebackInode that also returns the number of
// device writes it waited on, one after the other: each is a device round
// trip on the path of whoever waits for the writeback (an fsync counts
// them, Stats.DeviceRoundTrips).
func (s *Store) writebackInodeCounted(in *inode) (writes int, err error) {
	in.wbMu.Lock()
	defer in.wbMu.Unlock()
	return s.writebackHeld(in, true)
}

// writebackHeld is writebackInodeCounted with in.wbMu already held (by
// fallocate, which must keep extents from changing between the writeback
// and its own mapping, and which passes inlineOK false for a file about to
// grow past an inline extent: its block 0 then goes to a regular one).
func (s *Store) writebackHeld(in *inode, inlineOK bool) (writes int, err error) {
	in.mu.Lock()
	if in.deleted.Load() || len(in.pages.dirty) == 0 {
		in.mu.Unlock()
		return 0, nil
	}
	pages := in.pages.dirty
	in.pages.dirty = map[uint64]*page{}
	in.pages.dirtyPeak = 0 // a fresh map: the old one goes with the batch
	in.pages.dirtySince = time.Time{}
	for b, p := range pages {
		in.pages.wb[b] = p
	}
	s.itab.rechargeLocked(in)
	size := in.size
	in.mu.Unlock()
	// Until this writeback has released or re-dirtied its pages, each of
	// them is counted twice against the device: by its reservation and by
	// the block writeback allocated for it. A writer short of space waits
	// for that to settle before it concludes ENOSPC (wbState.reserve).
	s.wb.beginWriteback()
	defer s.wb.endWriteback()

	blocks := make([]uint64, 0, len(pages))
	for b := range pages {
		blocks = append(blocks, b)
	}
	slices.Sort(blocks)
	err = s.writeBlocks(in, pages, blocks, size, inlineOK, &writes)

	in.mu.Lock()
	defer in.mu.Unlock()
	if err == nil || in.deleted.Load() {
		s.releaseWritten(in, pages, blocks)
	} else {
		done := 0
		for b, p := range pages {
			if in.pages.wb[b] != p {
				continue // released with its batch
			}
			delete(in.pages.wb, b)
			// Failed: the page is dirty again, unless a newer one is.
			if in.pages.dirty[b] == nil {
				if len(in.pages.dirty) == 0 {
					in.pages.dirtySince = time.Now()
					s.wb.markDirty(in)
				}
				in.pages.dirty[b] = p
			} else {
				freePage(p)
				done++
			}
		}
		s.wb.unreserve(done)
		s.itab.rechargeLocked(in)
	}
	if in.pages.empty() {
		s.wb.markClean(in)
	}
	s.wb.setErr(err)
	if err != nil {
		s.log.Error("writeback failed", "ino", in.ino, "blocks", len(blocks), "err", err)
		return writes, err
	}
	s.stats.writebackBlocks.Add(uint64(len(blocks)))
	return writes, nil
}

// releaseWritten moves the pages of blocks that are written and mapped —
// readers find their data in the tree now — into the page cache, unless
// the writeback set holds a different page for the block by then (in.mu
// held). Their dirty budget goes back to writers.
func (s *Store) releaseWritten(in *inode, pages map[uint64]*page, blocks []uint64) {
	n := 0
	deleted := in.deleted.Load()
	epoch := s.epochLocked(in)
	for _, b := range blocks {
		if p := pages[b]; in.pages.wb[b] == p {
			delete(in.pages.wb, b)
			if deleted {
				freePage(p)
			} else {
				// The page's buffer, never written again, becomes the
				// block's clean copy in the page cache.
				s.pc.add(epoch, b, p.buf)
			}
			n++
		}
	}
	s.wb.unreserve(n)
}

// writeBlocks writes pages (blocks, sorted) of in, whose size was size
// when writeback began: inline, as one batch, or through a wbPipeline.
// writes counts the device writes (writeExtents).
func (s *Store) writeBlocks(in *inode, pages map[uint64]*page, blocks []uint64, size uint64, inlineOK bool, writes *int) error {
	if inlineOK && len(blocks) == 1 && blocks[0] == 0 && size <= uint64(s.inlineMax) {
		return s.writeInline(in, pages[0].buf[:size], size)
	}
	batches := planBatches(blocks, uint64(s.maxExtentBlocks()))
	assert.That(len(batches) > 0 && batches[len(batches)-1].last, "store: writeback's batches end with the last")
	if len(batches) == 1 {
		exts, staging := prepareBatch(&s.wbStaging, pages, batches[0])
		defer s.wbStaging.give(staging)
		return s.writeBatch(in, exts, batches[0].end(size), size, writes)
	}
	return newWBPipeline(s, in, pages, size, len(batches)).run(batches, writes)
}

// wbPrepareAhead is how many prepared batches may wait for the device
// behind the one being written.
const wbPrepareAhead = 1

// writeBatch writes and maps one batch (writeExtents), retrying with
// shorter extents when free space is too fragmented for them.
func (s *Store) writeBatch(in *inode, exts []newExtent, end, size uint64, writes *int) error {
	committed := false
	for {
		err := s.writeExtents(in, exts, end, size, writes)
		if err == nil {
			return nil
		}
		// The space was reserved at write time, but some of it may be
		// pinned — freed by transactions not yet durable (nodes that CoW
		// replaced) — until a commit: make one, once (only wbMu is held,
		// and no handle holder waits for it). Free space may also lie in
		// holes shorter than the extents: split them, down to single
		// blocks, and try again.
		var split bool
		if errors.Is(err, engine.ErrNoSpace) && !errors.Is(err, engine.ErrReadOnly) {
			if !committed {
				committed = true
				did, cerr := s.commitToUnpin()
				if cerr != nil {
					return cerr
				}
				if did {
					continue
				}
			}
			exts, split = halveExtents(exts)
		}
		if !split {
			return err
		}
	}
}

// halveExtents splits every extent longer than a block in two (block
// aligned), and reports whether it split any.
func halveExtents(xs []newExtent) ([]newExtent, bool) {
	out := make([]newExtent, 0, 2*len(xs))
	for _, x := range xs {
		if x.length <= blockSize {
			out = append(out, x)
			continue
		}
		h := x.length / blockSize / 2 * blockSize
		hs := h / blockSize * engine.CsumSize
		out = append(out, newExtent{off: x.off, length: h, buf: x.buf[:h], sums: x.sums[:hs]},
			newExtent{off: x.off + h, length: x.length - h, buf: x.buf[h:], sums: x.sums[hs:]})
	}
	return out, len(out) > len(xs)
}

// newExtent is one run of blocks on its way to the device.
type newExtent struct {
	off, length uint64 // file range
	disk        engine.Bytenr
	buf, sums   []byte
}

// writeExtents reserves space for a batch of extents, writes them, and
// maps them. The data I/O runs with no transaction handle and no inode lock
// but wbMu: the space is only reserved until the handle that inserts the
// extent items records it (engine.UseData), so a crash in between loses
// nothing and no commit waits for the I/O. Then, in the lock order — the
// inode's mu, a transaction handle, its extMu — the old extents of the
// range go and the new ones and their checksums come in.
//
// Batches go in file order, and each advances the size the tree holds to
// min(size, the batch's end): every dirty page below that end has been
// written by then, so the tree's size always covers a written prefix, and
// no extent lies past the tree's size but in its last block — a crash
// between batches leaves no stale blocks beyond the end of the file for a
// later extension to expose.
func (s *Store) writeExtents(in *inode, exts []newExtent, batchEnd, size uint64, writes *int) error {
	ios := make([]dev.IO, len(exts))
	unreserve := func(xs []newExtent) {
		for _, x := range xs {
			if err := s.e.UnreserveData(x.disk, x.length); err != nil {
				s.log.Error("writeback: returning reserved space", "err", err)
			}
		}
	}
	for i := range exts {
		disk, err := s.e.ReserveData(exts[i].length)
		if err != nil {
			unreserve(exts[:i])
			return err
		}
		exts[i].disk = disk
		ios[i] = dev.IO{Off: int64(disk), Buf: exts[i].buf}
	}
	*writes++
	if err := s.dev.Write(ios); err != nil {
		unreserve(exts)
		return err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	tr, err := s.e.StartReserved(0)
	if err != nil {
		unreserve(exts)
		return err
	}
	defer tr.End()
	in.extMu.Lock()
	defer in.extMu.Unlock()
	for _, x := range exts {
		s.e.UseData(tr, x.disk, x.length)
	}
	// From here a failure leaves half a change in the transaction.
	var added, freed uint64
	for _, x := range exts {
		fe := engine.FileExtent{Generation: tr.ID(), Type: engine.ExtentRegular, DiskBytenr: x.disk, NumBytes: x.length}
		f, err := s.mapExtent(tr, in, x.off, fe)
		freed += f
		if err != nil {
			return s.e.Abort(err)
		}
		if err := s.csum.InsertItem(tr, csumKey(uint64(x.disk)), x.sums); err != nil {
			return s.e.Abort(err)
		}
		added += x.length
	}
	s.stats.extentsWritten.Add(uint64(len(exts)))
	in.item.Nbytes = in.item.Nbytes + added - min(freed, in.item.Nbytes+added)
	in.diskSize = max(in.diskSize, min(size, batchEnd))
	if err := s.writeItem(tr, in); err != nil {
		return s.e.Abort(err)
	}
	return nil
}

// writeInline stores a small file's only block inside its extent item.
func (s *Store) writeInline(in *inode, data []byte, size uint64) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	tr, err := s.e.StartReserved(0)
	if err != nil {
		return err
	}
	defer tr.End()
	in.extMu.Lock()
	defer in.extMu.Unlock()
	freed, err := s.dropExtents(tr, in, 0, blockSize)
	if err == nil && len(data) > 0 {
		fe := engine.FileExtent{Generation: tr.ID(), Type: engine.ExtentInline, Data: data}
		err = s.fs.InsertItem(tr, extentKey(in.ino, 0), fe.Encode(nil))
	}
	if err != nil {
		return s.e.Abort(err)
	}
	in.item.Nbytes = in.item.Nbytes + uint64(len(data)) - min(freed, in.item.Nbytes+uint64(len(data)))
	in.diskSize = size
	if err := s.writeItem(tr, in); err != nil {
		return s.e.Abort(err)
	}
	return nil
}

// wbState is the store's dirty data accounting: the budget of buffered
// pages (memory), the device space promised to them (so that a write that
// cannot be written back fails with ENOSPC when it is made, not later),
// and the set of inodes with dirty pages, which the flusher walks.
type wbState struct {
	s    *Store
	mu   sync.Mutex
	cond *sync.Cond
	// pages is how many pages are buffered (dirty or under writeback);
	// each holds one unit of memory budget and one of space.
	pages  int64
	budget int64 // pages
	bg     int64 // pages: background writeback starts past it
	inodes map[Ino]*inode
	kick   chan struct{}
	// waiters counts writers waiting in reserve for the budget: the
	// flusher writes back for them whatever the background threshold (a
	// writer may need more than the budget above it).
	waiters int
	// writebacks counts writebackInode calls in progress. Their pages
	// hold both a reservation and an allocated block (and the nodes their
	// extents CoW'd are pinned) until they end, so the space they will
	// give back is not yet Available.
	writebacks int
	// err is the last writeback's error while no writeback has succeeded
	// since: a writer that would wait for the budget gets it instead of
	// waiting on a device that fails.
	err error
}

// spacePerPage is the device space one buffered page may take: its block
// and a share of the metadata that maps it (checksum, extent item, nodes).
const spacePerPage = blockSize + blockSize/32

func (w *wbState) init(s *Store, budget, bg int64) {
	w.s = s
	w.cond = sync.NewCond(&w.mu)
	w.budget, w.bg = budget/blockSize, bg/blockSize
	w.inodes = map[Ino]*inode{}
	w.kick = make(chan struct{}, 1)
}

func (w *wbState) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// reserve takes n pages of budget and space. With wait it waits while the
// budget is spent (backpressure: the flusher is kicked and frees it);
// without — for a caller holding inode locks or a transaction handle, who
// must not wait on writeback or a commit — it may go over, and does not
// commit to find space. ENOSPC if the device cannot hold the pages once written,
// after a commit has made the space freed by earlier transactions
// available.
func (w *wbState) reserve(n int, wait bool) error {
	w.mu.Lock()
	for wait && w.pages > 0 && w.pages+int64(n) > w.budget {
		if w.err != nil {
			err := w.err
			w.mu.Unlock()
			return err
		}
		w.waiters++
		w.wake()
		w.cond.Wait()
		w.waiters--
	}
	// Short of space, a waiting writer does what btrfs's space flushing
	// and ext4's retry of an allocation do before they give up: it lets
	// the writebacks in progress end (their pages are counted twice until
	// then), and then commits, since space freed by transactions not yet
	// durable — extents overwritten or unlinked, nodes CoW'd — comes back
	// only with a commit. Only then is the device full. A writer that may
	// not wait (it holds inode locks or a handle) is refused at once.
	committed, waited := false, false
	for {
		err := w.spaceLocked(n)
		if err == nil {
			break
		}
		if !wait {
			w.mu.Unlock()
			return err
		}
		if w.writebacks > 0 {
			if !waited {
				waited = true
				w.s.stats.spaceWaits.Add(1)
			}
			w.cond.Wait()
			continue
		}
		if committed {
			w.mu.Unlock()
			return err
		}
		committed = true
		w.mu.Unlock()
		did, cerr := w.s.commitToUnpin()
		if cerr != nil {
			return cerr
		}
		if !did {
			return err
		}
		w.mu.Lock()
	}
	w.pages += int64(n)
	if w.pages > w.bg {
		w.wake()
	}
	w.mu.Unlock()
	return nil
}

// spaceLocked checks that n more pages fit on the device.
func (w *wbState) spaceLocked(n int) error {
	avail := w.s.e.Space().Available
	if need := uint64(w.pages+int64(n)) * spacePerPage; need > avail {
		return engine.ErrNoSpace
	}
	return nil
}

// beginWriteback and endWriteback bracket a writebackInode.
func (w *wbState) beginWriteback() {
	w.mu.Lock()
	w.writebacks++
	w.mu.Unlock()
}

func (w *wbState) endWriteback() {
	w.mu.Lock()
	w.writebacks--
	assert.That(w.writebacks >= 0, "store: writeback ended more often than begun")
	w.mu.Unlock()
	w.cond.Broadcast()
}

// unreserve gives back n pages.
func (w *wbState) unreserve(n int) {
	if n == 0 {
		return
	}
	w.mu.Lock()
	w.pages -= int64(n)
	w.mu.Unlock()
	w.cond.Broadcast()
}

// setErr records the outcome of a writeback.
func (w *wbState) setErr(err error) {
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
	w.cond.Broadcast()
}

// waiting reports whether a writer waits for the budget.
func (w *wbState) waiting() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.waiters > 0
}

func (w *wbState) dirtyBytes() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pages * blockSize
}

func (w *wbState) reservedBytes() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pages * spacePerPage
}

// markDirty adds in to the dirty set, with a reference (in.mu held).
func (w *wbState) markDirty(in *inode) {
	in.buffered.Store(true)
	w.mu.Lock()
	_, ok := w.inodes[in.ino]
	if !ok {
		w.inodes[in.ino] = in
	}
	w.mu.Unlock()
	if !ok {
		w.s.itab.ref(in)
	}
}

// markClean removes in from the dirty set and drops its reference (in.mu
// held, in.pages empty). The page maps are made afresh, so that the memory
// of their largest size goes back, and the inode's charge with it
// (inode_charge.go).
func (w *wbState) markClean(in *inode) {
	assert.That(in.pages.empty(), "store: markClean of an inode with buffered pages")
	in.pages.init()
	w.s.itab.rechargeLocked(in)
	in.buffered.Store(false)
	w.mu.Lock()
	_, ok := w.inodes[in.ino]
	delete(w.inodes, in.ino)
	w.mu.Unlock()
	if ok {
		w.s.itab.put(in)
	}
}

// dirtyInodes returns the inodes with dirty pages, oldest first.
func (w *wbState) dirtyInodes() []*inode {
	w.mu.Lock()
	ins := make([]*inode, 0, len(w.inodes))
	for _, in := range w.inodes {
		ins = append(ins, in)
	}
	w.mu.Unlock()
	since := make(map[*inode]time.Time, len(ins))
	for _, in := range ins {
		in.mu.Lock()
		since[in] = in.pages.dirtySince
		in.mu.Unlock()
	}
	slices.SortFunc(ins, func(a, b *inode) int { return since[a].Compare(since[b]) })
	return ins
}
