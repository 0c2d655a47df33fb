package store

import (
	"sync/atomic"

	"ustore/engine"
	"ustore/internal/assert"
)

// The writeback of one inode's dirty pages, planned as batches and run
// through a pipeline of three goroutines when there is more than one
// batch (writeBlocks).

// wbRun is a run of contiguous blocks, at most one extent long.
type wbRun struct{ first, count uint64 }

// wbBatch is at most wbChunkBytes of runs (or one longer run), in file
// order. last marks the writeback's final batch: once it is mapped, every
// page dirty when writeback began is written.
type wbBatch struct {
	runs []wbRun
	last bool
}

// planBatches groups blocks (sorted) into runs of at most maxRun blocks,
// and the runs into batches.
func planBatches(blocks []uint64, maxRun uint64) []wbBatch {
	var runs []wbRun
	for _, b := range blocks {
		if k := len(runs); k > 0 && runs[k-1].first+runs[k-1].count == b && runs[k-1].count < maxRun {
			runs[k-1].count++
			continue
		}
		runs = append(runs, wbRun{b, 1})
	}
	var batches []wbBatch
	for len(runs) > 0 {
		n, bytes := 0, uint64(0)
		for n < len(runs) && (n == 0 || bytes+runs[n].count*blockSize <= wbChunkBytes) {
			bytes += runs[n].count * blockSize
			n++
		}
		batches = append(batches, wbBatch{runs: runs[:n], last: n == len(runs)})
		runs = runs[n:]
	}
	return batches
}

// end is where the tree's size of the file may reach once the batch is
// mapped, size being the file's size when writeback began.
func (b wbBatch) end(size uint64) uint64 {
	r := b.runs[len(b.runs)-1]
	if b.last {
		// Every page dirty when writeback began is written, so the tree's
		// size may cover the whole file (a truncate that grew it past
		// buffered pages left it behind).
		return max((r.first+r.count)*blockSize, size)
	}
	return (r.first + r.count) * blockSize
}

// prepareBatch copies a batch's pages into a staging buffer taken from
// set (a small batch's of its own; a larger one waits for one of the set's
// while all are taken) and checksums them. The caller gives the buffer
// back once the extents are written.
func prepareBatch(set *wbStagingSet, pages map[uint64]*page, b wbBatch) ([]newExtent, *[]byte) {
	bytes := uint64(0)
	for _, r := range b.runs {
		bytes += r.count * blockSize
	}
	// planBatches makes a batch longer than a chunk only of one run
	// longer than one, and a run is at most maxExtentBlocks (1 MiB).
	assert.That(bytes <= wbChunkBytes, "store: a writeback batch longer than its staging buffer")
	staging := set.take(bytes)
	exts := make([]newExtent, len(b.runs))
	at := uint64(0)
	for i, r := range b.runs {
		exts[i] = newExtent{off: r.first * blockSize, length: r.count * blockSize}
		buf := (*staging)[at : at+exts[i].length : at+exts[i].length]
		at += exts[i].length
		sums := make([]byte, r.count*engine.CsumSize)
		for j := range r.count {
			blk := buf[j*blockSize : (j+1)*blockSize]
			copy(blk, pages[r.first+j].buf)
			engine.PutCsum(sums, int(j), engine.DataCsum(blk))
		}
		exts[i].buf, exts[i].sums = buf, sums
	}
	return exts, staging
}

// wbPipeline writes several batches of one inode: the caller's goroutine
// copies and checksums them (prepare), one goroutine writes and maps them
// in file order, as writeExtents requires (write), so that the copies and
// checksums overlap the device writes instead of alternating with them.
//
// A third goroutine releases each batch's pages once the batch is mapped
// (its extents are in the tree, so readers find the data there): freeing
// tens of thousands of pages at the end of the writeback would leave the
// device idle meanwhile, and hold the budget back from writers.
// writebackInode handles the pages not released.
//
// Who touches what: queue carries prepared batches from prepare to write
// (at most wbPrepareAhead waiting); mapped carries mapped batches from
// write to release (room for all, so write never waits on release);
// released tells write that release is done; done carries write's error
// back to run. failed is set by write on an error and read by prepare,
// which then stops preparing. pages is read by prepare and, under in.mu,
// by release; the pages themselves are not written while the writeback
// runs (in.wbMu is held).
type wbPipeline struct {
	s     *Store
	in    *inode
	pages map[uint64]*page
	size  uint64

	queue    chan wbPrepared
	mapped   chan []wbRun
	released chan struct{}
	done     chan error
	failed   atomic.Bool
	writes   int // device writes, counted by write
}

// wbPrepared is a batch copied and checksummed, waiting for the device.
type wbPrepared struct {
	exts    []newExtent
	end     uint64
	staging *[]byte
	batch   wbBatch
}

func newWBPipeline(s *Store, in *inode, pages map[uint64]*page, size uint64, batchCount int) *wbPipeline {
	return &wbPipeline{
		s:        s,
		in:       in,
		pages:    pages,
		size:     size,
		queue:    make(chan wbPrepared, wbPrepareAhead),
		mapped:   make(chan []wbRun, batchCount),
		released: make(chan struct{}),
		done:     make(chan error, 1),
	}
}

// run writes batches and returns the first error; when it returns, every
// goroutine it started has ended.
// It adds the device writes it made to writes.
func (w *wbPipeline) run(batches []wbBatch, writes *int) error {
	go w.release()
	go w.write()
	w.prepare(batches)
	err := <-w.done
	*writes += w.writes // write's last store happens before its send on done
	return err
}

// prepare copies and checksums each batch and queues it, until the last
// or until write fails.
func (w *wbPipeline) prepare(batches []wbBatch) {
	for _, batch := range batches {
		if w.failed.Load() {
			break
		}
		exts, staging := prepareBatch(&w.s.wbStaging, w.pages, batch)
		w.queue <- wbPrepared{exts, batch.end(w.size), staging, batch}
	}
	close(w.queue)
}

// write writes and maps the queued batches in order; after an error it
// only puts their staging buffers back.
func (w *wbPipeline) write() {
	var err error
	lastSeen := false
	for p := range w.queue {
		assert.That(!lastSeen, "store: no writeback batch follows the last")
		lastSeen = p.batch.last
		if err == nil {
			if err = w.s.writeBatch(w.in, p.exts, p.end, w.size, &w.writes); err != nil {
				w.failed.Store(true)
			} else {
				w.mapped <- p.batch.runs
			}
		}
		w.s.wbStaging.give(p.staging)
	}
	close(w.mapped)
	<-w.released
	w.done <- err
}

// release frees each mapped batch's pages.
func (w *wbPipeline) release() {
	defer close(w.released)
	for runs := range w.mapped {
		var bs []uint64
		for _, r := range runs {
			for b := r.first; b < r.first+r.count; b++ {
				bs = append(bs, b)
			}
		}
		w.in.mu.Lock()
		w.s.releaseWritten(w.in, w.pages, bs)
		w.in.mu.Unlock()
	}
}
