package store

import (
	"fmt"
	"slices"

	"ustore/dev"
	"ustore/engine"
	"ustore/internal/assert"
)

// An fsync's data in its log sync's batch. Ordered data as writeback does
// it costs an fsync three device round trips one after the other: its data
// write, then the log sync's nodes and chain record, then the flush. The
// data need not be written before the log nodes, only before the flush
// that makes the chain record acknowledgeable — a flush covers the writes
// completed when it is issued — so the fsync of a file with a small dirty
// set hands its data writes to the log sync, which submits them with its
// nodes and record and flushes once all have completed: two round trips
// (engine.SyncLog). A power cut before that flush keeps any subset of
// data, nodes and record, as it did when the data went first (that write
// was not flushed either): a record durable over lost data is refused by
// replay's check of the logged data against its logged checksums, which
// falls back one record (logtree.Replay; TestLogChain_Crash_DataLost), and
// a lost record leaves the data's blocks unreachable, free in the last
// commit's free space tree. Data is always written to new blocks (no extent
// is overwritten in place), so a lost data write never damages what an
// older record or commit references.
//
// What changes is the order in memory: the extents are mapped — extent
// items, checksums, the inode's size — into the running transaction before
// their data is on the device. Two rules keep that invisible:
//
//   - no commit before the data: the items are mapped under the fsync's
//     own transaction handle, which it holds until the data has completed
//     (the log sync's, or — when the sync fails or the fsync falls back to
//     a commit — its own write of the same blocks, made before the handle
//     ends: writeFsyncData), so the commit that makes them durable flushes
//     after the data as it would after writeback;
//   - no reader before the data: the fsync holds the inode's extMu for
//     writing from the mapping until the data has completed, and its pages
//     stay under writeback (readers and writers find them there), so no read
//     maps a block whose data is not written.
//
// It takes the path only when it can take it at once: the inode's dirty
// pages fit one writeback batch and are not an inline extent, no writeback
// of the inode is running (wbMu free), and their space can be reserved now.
// Otherwise it writes back first, as before (writeData).

// fsyncData is the dirty data of one file on its way to the device with its
// fsync's log sync. Its pages are under writeback from takeFsyncData until
// settleFsyncData.
type fsyncData struct {
	pages   map[uint64]*page
	blocks  []uint64
	size    uint64 // the file's size when the pages were taken
	end     uint64 // where the tree's size may reach once they are mapped
	exts    []newExtent
	ios     []dev.IO // the extents' writes
	staging *[]byte
	// mapped: mapExtents began (the space is in the transaction, not
	// reserved); written: the writes have completed; err: the data's
	// outcome (not the fsync's), for settleFsyncData.
	mapped, written bool
	err             error
}

// takeFsyncData takes in's dirty pages for the fsync's log sync to write,
// or returns nil when that path does not apply (the caller writes back
// first). With a result, the caller holds renameMu for reading and in.wbMu
// (taken in the lock order) and logAndSync releases them.
func (s *Store) takeFsyncData(in *inode) *fsyncData {
	if !in.buffered.Load() || in.dir || in.link {
		return nil
	}
	s.renameMu.RLock()
	// A writeback of this inode in progress (the flusher's, a truncate's):
	// the fsync waits for it in writeData, without renameMu.
	if !in.wbMu.TryLock() {
		s.renameMu.RUnlock()
		return nil
	}
	in.mu.Lock()
	n := len(in.pages.dirty)
	inline := n == 1 && in.pages.dirty[0] != nil && in.size <= uint64(s.inlineMax)
	if in.deleted.Load() || n == 0 || inline || uint64(n)*blockSize > wbChunkBytes {
		in.mu.Unlock()
		in.wbMu.Unlock()
		s.renameMu.RUnlock()
		return nil
	}
	fd := &fsyncData{}
	fd.pages, fd.blocks, fd.size = s.takeDirtyLocked(in)
	in.mu.Unlock()
	s.wb.beginWriteback() // as writebackHeld: the pages count twice until settled
	batches := planBatches(fd.blocks, uint64(s.maxExtentBlocks()))
	assert.That(len(batches) == 1 && batches[0].last, "store: an fsync's data in its log sync is one writeback batch")
	fd.exts, fd.staging = prepareBatch(fd.pages, batches[0])
	fd.end = batches[0].end(fd.size)
	ios, err := s.reserveExtents(fd.exts)
	if err != nil {
		// Short of contiguous space: writeback's retries (a commit to
		// unpin, shorter extents) are for writeData.
		putStaging(fd.staging)
		in.mu.Lock()
		s.redirtyLocked(in, fd.pages)
		in.mu.Unlock()
		s.wb.endWriteback()
		in.wbMu.Unlock()
		s.renameMu.RUnlock()
		return nil
	}
	fd.ios = ios
	return fd
}

// mapFsyncData maps fd's extents into in under tr (in.mu and tr held) and
// leaves in.extMu held for writing, for writeFsyncData to release once the
// data has completed.
func (s *Store) mapFsyncData(tr *engine.Trans, in *inode, fd *fsyncData) error {
	in.extMu.Lock()
	fd.mapped = true
	if err := s.mapExtents(tr, in, fd.exts, fd.end, fd.size); err != nil {
		in.extMu.Unlock()
		fd.err = err
		return err
	}
	return nil
}

// writeFsyncData makes sure fd's data has completed before the fsync's
// handle ends, writing it itself unless the log sync did, and releases
// in.extMu: readers may map the blocks now. A failed write aborts the
// transaction, which maps blocks whose content is unknown.
func (s *Store) writeFsyncData(in *inode, fd *fsyncData) {
	defer in.extMu.Unlock()
	if fd.written || fd.err != nil {
		return
	}
	ios := slices.Clone(fd.ios)
	s.stats.fsyncDataRoundTrips.Add(1)
	if err := s.dev.Write(ios); err != nil {
		fd.err = s.e.Abort(fmt.Errorf("store: writing the data of inode %d's fsync: %w", in.ino, err))
		return
	}
	fd.written = true
}

// settleFsyncData ends fd's writeback (no lock held but in.wbMu, which it
// releases): written and mapped, the pages go to the page cache; never
// mapped, the reserved space goes back, and the pages are dirty again
// (freed, if in was deleted); failed, they are dirty again.
func (s *Store) settleFsyncData(in *inode, fd *fsyncData) {
	defer in.wbMu.Unlock()
	defer s.wb.endWriteback()
	defer putStaging(fd.staging)
	if !fd.mapped {
		s.unreserveExtents(fd.exts)
		assert.That(fd.err != nil || in.deleted.Load(), "store: an fsync's data goes unmapped only when it failed or its inode was deleted")
	} else {
		assert.That(fd.err != nil || fd.written, "store: an fsync's mapped data is written or failed before it settles")
	}
	_ = s.settleWriteback(in, fd.pages, fd.blocks, fd.err)
}
