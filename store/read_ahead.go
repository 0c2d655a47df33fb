package store

import (
	"sync"
	"sync/atomic"

	"ustore/internal/assert"
)

// Read-ahead: a sequential reader's next blocks are read from the device
// before it asks for them, several 1 MiB chunks in one submission, in the
// background, so that the device works while the reader (and the client
// behind it) consumes what came before — as fio keeps its queue depth.
//
// The window. An inode's sequential run is its reads that start at the
// block after the run's last read (raNext), or anywhere in the window
// read ahead for it, or up to a pipeline's reads past it (a client with
// several reads in flight sends them in order, but the server runs them
// concurrently, so they take the inode's lock in any order; a read that
// overtook the window has read-ahead issue the blocks of the reads it
// overtook, which then find them in flight). Each read of the run doubles how many chunks are
// kept ahead of it (raChunks), from 1 to readAheadChunksMax; a read
// elsewhere ends the run. A read tops the window up: the chunks from
// raEnd (what was issued so far) to raChunks past its own end go to the
// device in one submission — with the read's own blocks when it missed
// some (the reader waits for that submission: at the start of a run it is
// one chunk ahead), by themselves in the background when it missed none.
//
// Chunks in flight. Every chunk issued is on the inode's raFlight until
// its blocks are in the cache, so that a reader that wants one of its
// blocks waits for it instead of reading it again; after one such wait,
// a block still missing (its fill was refused, or failed its checksum) is
// read on demand. A chunk holds one of the store's readAheadInflightMax
// slots from its issue to its end: read-ahead never holds more than that
// in staging buffers, whatever the readers. A chunk leaves out blocks
// buffered (dirty or under writeback: their bytes are newer than the
// device's) and blocks cached already.
//
// Never stale. A chunk's blocks are cached as a read's are (readCacheFill:
// not if a block of the inode was dirtied, or its epoch changed, since
// the chunk was issued). The background read takes a reference on the
// inode, and gives up if the table holds another inode of that number by
// then: the table evicts no referenced inode, so the one it fills is the
// one writers change.
//
// Scans. A run over a file large next to the cache reads its chunks into
// the scan ring's buffers instead, and readers are served from them; the
// cache is left alone (scan_ring.go).

const (
	// readAheadChunkBlocks is one chunk of read-ahead (1 MiB): one
	// staging buffer, and the protocol's largest read.
	readAheadChunkBlocks = 256
	// readAheadChunksMax is how many chunks a sequential run keeps
	// ahead of its reader, and in flight at most (4 MiB). Read-ahead in
	// flight is memory outside the cache budget (a staging buffer and
	// the copies that fill the cache, per chunk), so it is part of the
	// fixed allowance of the memory bound (RSS ≤ cache + dirty + 64 MiB,
	// TestMem_InodesAndData): at 8 chunks a single sequential reader
	// left that test 0.3 MiB of room.
	readAheadChunksMax = 4
	// readAheadInflightMax bounds the chunks in flight in the whole
	// store (16 MiB of staging buffers), across every reader: the
	// allowance again.
	readAheadInflightMax = 16
	// readAheadBackBlocks is how far before raNext a read may start and
	// still be in the run: the reads of a client's pipeline (8 reads of
	// 1 MiB) that take the inode's lock after a later one.
	readAheadBackBlocks = 8 * readAheadChunkBlocks
	// readAheadOverBlocks is how far past what read-ahead issued a read
	// may start and still be in the run: a later read of the pipeline
	// that takes the lock before the reads it follows, the window
	// holding fewer chunks than the pipeline reads. Ending the run there
	// made the reads it overtook, and those after them, read on demand
	// until a new run's window caught up.
	readAheadOverBlocks = 8 * readAheadChunkBlocks
)

// Read-ahead reads chunk by chunk, each its own staging buffer.
const _ = uint(readPieceBlocksMax - readAheadChunkBlocks)

// Everything kept ahead goes in one submission.
const _ = uint(readSubmitBlocksMax - readAheadChunksMax*readAheadChunkBlocks)

// raChunk is a chunk of read-ahead in flight: blocks [first, end) of the
// inode, done closed once its blocks are cached (or will not be).
type raChunk struct {
	first, end uint64
	done       chan struct{}
	scan       *scanChunk // a scan's chunk (scan_ring.go), or nil
}

// readAheadState is the store's part of read-ahead: the slots of chunks
// in flight, and the background reads Close waits for.
type readAheadState struct {
	inflight atomic.Int64 // chunks holding a slot
	mu       sync.Mutex   // closed and wg.Add
	closed   bool
	wg       sync.WaitGroup
}

// takeSlot takes one of the store's read-ahead slots, if one is free.
func (ra *readAheadState) takeSlot() bool {
	for {
		n := ra.inflight.Load()
		if n >= readAheadInflightMax {
			return false
		}
		if ra.inflight.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// sequentialLocked says whether a read of blocks [first, last] continues
// in's sequential run, and moves the run (in.mu held). A read that
// overtook the run — it starts past the run's end and past what was
// issued, within a pipeline's reads — is in it, and gap is the first
// block of the reads it overtook that read-ahead has not issued (0:
// none): their reads have not taken the lock yet.
func (in *inode) sequentialLocked(first, last uint64) (seq bool, gap uint64) {
	seq = first == in.raNext ||
		(in.raEnd != 0 && first <= in.raEnd+readAheadOverBlocks && first+readAheadBackBlocks >= in.raNext)
	if !seq {
		in.raNext, in.raEnd, in.raChunks = last+1, 0, 0
		return false, 0
	}
	if g := max(in.raEnd, in.raNext); first > g {
		gap = g
	}
	in.raNext = max(in.raNext, last+1)
	in.raChunks = min(max(1, 2*in.raChunks), readAheadChunksMax)
	return true, gap
}

// readAheadLocked issues the chunks that keep in's window full after a
// sequential read of blocks [first, last]: it registers them on
// in.raFlight and returns them with the runs of their blocks to read
// (in.mu held). A read that overtook its run (gap, sequentialLocked)
// issues the blocks of the reads it overtook first, not its own. Nothing
// when the window is full, the file ends, the inode has
// readAheadChunksMax chunks in flight or the store no slot.
func (s *Store) readAheadLocked(in *inode, epoch, first, last, gap uint64) ([]*raChunk, []blockRun) {
	if in.size == 0 {
		return nil, nil
	}
	// A scan's window is twice the cached path's: its chunks in flight
	// are the ring's buffers, not staging buffers and their copies, and
	// a client's pipeline (8 reads of 1 MiB) reaches past 4 chunks.
	window, flight := in.raChunks, readAheadChunksMax
	scan := s.scanLocked(in)
	if scan {
		s.scanPruneLocked(in)
		window, flight = 2*window, scanWindowChunks
	}
	end := (in.size-1)/blockSize + 1
	target := min(last+1+uint64(window)*readAheadChunkBlocks, end)
	from := max(in.raEnd, last+1)
	if gap != 0 {
		from = gap
	}
	var chunks []*raChunk
	var runs []blockRun
	for from < target && len(in.raFlight) < flight {
		if from >= first && from <= last {
			from = last + 1 // the read's own blocks: it reads them
			continue
		}
		if e := in.inFlightAtLocked(from); e != 0 {
			// An older run's chunk is reading these blocks already.
			from = e
			continue
		}
		if e := in.scanHeldAtLocked(from); e != 0 {
			from = e // or holds them in the scan ring
			continue
		}
		c := &raChunk{first: from, end: min(from+readAheadChunkBlocks, end)}
		if from < first && c.end > first {
			c.end = first // a gap's last chunk ends at the read
		}
		for _, l := range [][]*raChunk{in.raFlight, in.scanReady} {
			for _, f := range l {
				if f.first > c.first && f.first < c.end {
					c.end = f.first // up to the next chunk in flight or held
				}
			}
		}
		var cr []blockRun
		for b := c.first; b < c.end; b++ {
			if in.pages.lookup(b) == nil && s.pc.get(epoch, b) == nil {
				cr = addBlock(cr, b, true)
			}
		}
		if len(cr) > 0 {
			if scan && in.scanChunksLocked() >= scanInodeChunks {
				break
			}
			if !s.ra.takeSlot() {
				break
			}
			if scan {
				buf := s.scanBuffer(in)
				if buf == nil {
					s.ra.inflight.Add(-1)
					break
				}
				c.scan = &scanChunk{owner: in, buf: buf, epoch: epoch, seq: in.cacheSeq}
			}
			c.done = make(chan struct{})
			in.raFlight = append(in.raFlight, c)
			chunks = append(chunks, c)
			runs = append(runs, cr...)
			s.stats.readAheadBlocks.Add(blocksIn(cr))
		}
		from = c.end
	}
	in.raEnd = max(in.raEnd, from)
	return chunks, runs
}

// inFlightAtLocked returns the end of the chunk in flight that holds block
// b, or 0 if none does (in.mu held).
func (in *inode) inFlightAtLocked(b uint64) uint64 {
	for _, c := range in.raFlight {
		if c.first <= b && b < c.end {
			return c.end
		}
	}
	return 0
}

// readAheadWaitLocked returns the chunks in flight that hold a block of
// missing (in.mu held).
func (in *inode) readAheadWaitLocked(missing []blockRun) []*raChunk {
	var w []*raChunk
	for _, c := range in.raFlight {
		for _, r := range missing {
			if r.first < c.end && c.first < r.first+r.count {
				w = append(w, c)
				break
			}
		}
	}
	return w
}

// readAheadDoneLocked takes chunks off in's flight and ends them: their waiters
// look again. (in.mu held.)
func (s *Store) readAheadDoneLocked(in *inode, chunks []*raChunk) {
	if len(chunks) == 0 {
		return
	}
	kept := in.raFlight[:0]
	for _, c := range in.raFlight {
		ours := false
		for _, d := range chunks {
			ours = ours || c == d
		}
		if !ours {
			kept = append(kept, c)
		}
	}
	assert.That(len(in.raFlight)-len(kept) == len(chunks), "store: a chunk of read-ahead ended that was not in flight")
	clear(in.raFlight[len(kept):])
	in.raFlight = kept
	s.scanFilledLocked(in, chunks)
	for _, c := range chunks {
		close(c.done)
	}
	assert.That(s.ra.inflight.Add(-int64(len(chunks))) >= 0, "store: more chunks of read-ahead ended than began")
}

// readAheadStart reads chunks (runs, their blocks) of in in the
// background, in one submission, and caches them; fill is the inode's
// snapshot when they were issued. Called with no lock held.
func (s *Store) readAheadStart(in *inode, chunks []*raChunk, runs []blockRun, fill cacheFill) {
	if len(chunks) == 0 {
		return
	}
	s.ra.mu.Lock()
	if s.ra.closed {
		s.ra.mu.Unlock()
		in.mu.Lock()
		s.readAheadDoneLocked(in, chunks)
		in.mu.Unlock()
		return
	}
	s.ra.wg.Add(1)
	s.ra.mu.Unlock()
	s.stats.readAheadSubmissions.Add(1)
	go s.readAheadRun(in, chunks, runs, fill)
}

func (s *Store) readAheadRun(in *inode, chunks []*raChunk, runs []blockRun, fill cacheFill) {
	defer s.ra.wg.Done()
	// A reference keeps in the table's while the chunks are read; an
	// inode of that number loaded since is another, which in's fill must
	// not touch (the caller, ReadCached, may hold no reference).
	var held *inode
	var err error
	if s.itab.peek(in.ino) == in {
		if held, err = s.itab.get(in.ino); err == nil {
			defer s.itab.put(held)
		}
	}
	if held == in {
		in.extMu.RLock()
		// A failed chunk is not an error: a demand read of its blocks
		// says what is wrong with them. A scan's chunks are read into
		// their own buffers and kept there, not in the cache.
		if chunks[0].scan != nil {
			_ = s.readRunsTo(in, runs, scanInto(chunks), scanVerified(chunks, fill.size))
		} else {
			_ = s.readRuns(in, runs, fill.keep)
		}
		in.extMu.RUnlock()
	} else {
		fill.blocks, fill.bufs = nil, nil
	}
	s.readCacheFill(in, &fill, chunks)
}

// readAheadClose stops new background reads and waits for those running
// (Close, before the engine closes).
func (s *Store) readAheadClose() {
	s.ra.mu.Lock()
	s.ra.closed = true
	s.ra.mu.Unlock()
	s.ra.wg.Wait()
}

// cacheFill collects the blocks a read fetched from the device, to cache
// them once it is over if nothing changed the inode meanwhile: epoch and
// seq are the inode's when the read looked for buffered pages, size its
// size then (bytes past it are zeroed in a cached block: the device may
// hold stale bytes there, from before a truncate).
type cacheFill struct {
	epoch, seq, size uint64
	blocks           []uint64
	bufs             [][]byte
}

// keep copies the blocks of data, which holds run r, for the cache.
func (f *cacheFill) keep(r blockRun, data []byte) {
	for i := range r.count {
		b := r.first + i
		if b*blockSize >= f.size {
			return
		}
		buf := make([]byte, blockSize)
		copy(buf, data[i*blockSize:])
		if end := f.size - b*blockSize; end < blockSize {
			clear(buf[end:])
		}
		f.blocks = append(f.blocks, b)
		f.bufs = append(f.bufs, buf)
	}
}

// testHookBeforeFill, set by a test, runs in a read between its device
// read and its cache fill, with no lock held: where a writer can change
// the blocks it read (TestPageCache_Read_FillAfterOverwrite).
var testHookBeforeFill func(Ino)

// readCacheFill caches what f kept, unless a block of in was dirtied, or
// its epoch changed, since the read took its snapshot: its device bytes
// may then be older than what a writer has since put in the cache. Then
// it ends chunks, the read-ahead the read carried.
func (s *Store) readCacheFill(in *inode, f *cacheFill, chunks []*raChunk) {
	if len(f.blocks) == 0 && len(chunks) == 0 {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	defer s.readAheadDoneLocked(in, chunks)
	if in.cacheSeq != f.seq || in.epoch != f.epoch || in.deleted.Load() {
		return
	}
	for i, b := range f.blocks {
		s.pc.add(f.epoch, b, f.bufs[i])
	}
}
