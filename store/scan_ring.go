package store

import (
	"math/bits"
	"sync"

	"ustore/dev"
	"ustore/internal/assert"
)

// The scan ring: a sequential run over a file large next to the cache
// (at least Options.ScanReadBytes, by default a quarter of the cache
// budget) is a scan, and a scan's blocks do not go through the page
// cache. Its chunks of read-ahead are read into buffers of a small ring
// the store reuses, and readers are served from them; nothing of the scan
// is cached, so it neither pays for a page per block (an allocation, its
// first touch, a copy, the collector marking it) nor evicts what other
// readers use: PostgreSQL gives a large sequential scan a ring of a few
// buffers instead of its shared buffers for the same two reasons. The
// scan's own reads that miss (the run's first, a read that overtook the
// window) read the device on demand and are not cached either.
//
// Never stale. A scan chunk records its inode's epoch and cacheSeq when
// it is issued, as a read's cache fill does (cacheFill), and a reader
// uses it only while both are unchanged and the inode not deleted, under
// the inode's mu. Every write dirties a page (cacheSeq), every truncate
// that shrinks, punch and deletion changes the epoch: after any of them,
// returned, the chunk is never read again. The page cache keeps a filled
// block until its own write; a chunk is dropped whole at the first write
// of its file, which is stricter, and cheap for a scan. Readers look at
// buffered pages before the chunk, and a chunk holds only the blocks it
// read and verified (valid): a block buffered or cached when it was
// issued is not in it.
//
// Bounded. The ring holds at most scanRingChunks buffers of one chunk
// (16 MiB), made on first use and kept: a constant outside the cache
// budget, like read-ahead's staging buffers, in the fixed allowance of
// the memory bound. A chunk holds its buffer from its issue until it is
// released: once every block it holds has been served, when it is found
// stale or behind its run, and — when a scan wants a buffer and the ring
// has none free — the oldest ready chunk of another inode, taken under
// that inode's mu by TryLock (the ring's lock is held then, and is
// otherwise taken under an inode's mu: TryLock never waits).

const (
	// scanRingChunks is how many chunk buffers the ring holds at most.
	scanRingChunks = 16
	// scanWindowChunks is how many chunks a scan keeps ahead of its
	// reader, and in flight at most: a client's pipeline of 8 reads of
	// 1 MiB, as fio's queue depth 8.
	scanWindowChunks = 2 * readAheadChunksMax
	// scanInodeChunks bounds one inode's scan chunks, in flight and
	// ready: its window ahead and the chunks its pipelined readers have
	// not reached yet.
	scanInodeChunks = 12
	// scanCacheShare: a file of at least CacheBytes/scanCacheShare bytes
	// read sequentially is a scan (the default of ScanReadBytes).
	scanCacheShare = 4
)

// A scan's window goes in one submission; the ring holds an inode's
// chunks.
const (
	_ = uint(readSubmitBlocksMax - scanWindowChunks*readAheadChunkBlocks)
	_ = uint(scanRingChunks - scanInodeChunks)
)

// A chunk's blocks fit its bitmaps.
const _ = uint(len(scanBits{})*64 - readAheadChunkBlocks)

// scanBits is a set of a chunk's blocks, by their index in it.
type scanBits [readAheadChunkBlocks / 64]uint64

func (s *scanBits) set(i uint64)      { s[i/64] |= 1 << (i % 64) }
func (s *scanBits) has(i uint64) bool { return s[i/64]&(1<<(i%64)) != 0 }

// covers says whether s holds every block of o.
func (s *scanBits) covers(o *scanBits) bool {
	for i := range s {
		if o[i]&^s[i] != 0 {
			return false
		}
	}
	return true
}

func (s *scanBits) count() int {
	n := 0
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}

// scanChunk is a chunk's part of a scan: its buffer and what it holds.
// Guarded by the owner's mu (the ring's lock guards ready).
type scanChunk struct {
	owner      *inode
	buf        []byte // the chunk's blocks, from the ring
	epoch, seq uint64 // owner's when the chunk was issued
	valid      scanBits
	served     scanBits
	ready      bool // on owner's scanReady and the ring's ready
}

// scanRing is the store's ring of chunk buffers.
type scanRing struct {
	mu    sync.Mutex
	free  [][]byte
	made  int
	held  int        // buffers held by chunks
	ready []*raChunk // chunks holding blocks for readers, oldest first
}

// scanLocked says whether a sequential run of in is a scan (in.mu held).
func (s *Store) scanLocked(in *inode) bool {
	return s.opts.ScanReadBytes > 0 && in.size >= uint64(s.opts.ScanReadBytes)
}

// takeBufferLocked returns a free buffer of the ring, made if the ring
// has made fewer than scanRingChunks, or nil if all are held (r.mu held).
func (r *scanRing) takeBufferLocked() []byte {
	if n := len(r.free); n > 0 {
		b := r.free[n-1]
		r.free[n-1] = nil
		r.free = r.free[:n-1]
		r.held++
		return b
	}
	if r.made < scanRingChunks {
		r.made++
		r.held++
		return dev.AlignedBuffer(readAheadChunkBlocks * blockSize)
	}
	return nil
}

// scanBuffer returns a buffer for a scan chunk of in (in.mu held): a
// free one, or the oldest ready chunk's of another inode whose mu is
// free; nil if there is none.
func (s *Store) scanBuffer(in *inode) []byte {
	r := &s.scan
	r.mu.Lock()
	defer r.mu.Unlock()
	if b := r.takeBufferLocked(); b != nil {
		return b
	}
	for _, c := range r.ready {
		o := c.scan.owner
		if o == in || !o.mu.TryLock() {
			continue
		}
		o.scanDropLocked(r, c)
		o.mu.Unlock()
		s.stats.scanReclaims.Add(1)
		return r.takeBufferLocked()
	}
	return nil
}

// scanDropLocked releases c, a ready chunk of in, and its buffer (in.mu
// and r.mu held).
func (in *inode) scanDropLocked(r *scanRing, c *raChunk) {
	assert.That(c.scan.ready && c.scan.owner == in, "store: a scan chunk dropped that is not its inode's ready one")
	in.scanReady = removeChunk(in.scanReady, c)
	r.ready = removeChunk(r.ready, c)
	r.putBufferLocked(c.scan)
}

// putBufferLocked gives sc's buffer back to the ring (r.mu held).
func (r *scanRing) putBufferLocked(sc *scanChunk) {
	r.free = append(r.free, sc.buf)
	sc.buf, sc.ready = nil, false
	r.held--
	assert.That(r.held >= 0, "store: more scan buffers given back than taken")
}

// removeChunk returns cs without c, in order.
func removeChunk(cs []*raChunk, c *raChunk) []*raChunk {
	for i, d := range cs {
		if d == c {
			copy(cs[i:], cs[i+1:])
			cs[len(cs)-1] = nil
			return cs[:len(cs)-1]
		}
	}
	panic("store: a scan chunk not on its list")
}

// scanUsableLocked says whether in may read sc: nothing changed the
// inode's blocks since sc was issued (in.mu held).
func (in *inode) scanUsableLocked(sc *scanChunk) bool {
	return in.epoch == sc.epoch && in.cacheSeq == sc.seq && !in.deleted.Load()
}

// scanBlockLocked returns block b's bytes from a ready scan chunk of in
// that may be read, or nil (in.mu held).
func (in *inode) scanBlockLocked(b uint64) []byte {
	for _, c := range in.scanReady {
		if b < c.first || b >= c.end {
			continue
		}
		sc, i := c.scan, b-c.first
		if !sc.valid.has(i) || !in.scanUsableLocked(sc) {
			return nil
		}
		return sc.buf[i*blockSize : (i+1)*blockSize]
	}
	return nil
}

// scanHeldAtLocked returns the end of the ready scan chunk of in that
// holds block b and may be read, or 0 if none does (in.mu held): a new
// run's read-ahead does not read its blocks again.
func (in *inode) scanHeldAtLocked(b uint64) uint64 {
	for _, c := range in.scanReady {
		if c.first <= b && b < c.end && in.scanUsableLocked(c.scan) {
			return c.end
		}
	}
	return 0
}

// scanServedLocked marks blocks [first, last] of in served from its scan
// chunks, once a read has returned them, and releases the chunks no
// reader will read (in.mu held). A read that declines (ReadCached) marks
// nothing: the Read after it finds the same chunks.
func (s *Store) scanServedLocked(in *inode, first, last uint64) {
	for _, c := range in.scanReady {
		for b := max(first, c.first); b <= last && b < c.end; b++ {
			c.scan.served.set(b - c.first)
		}
	}
	s.scanPruneLocked(in)
}

// scanPruneLocked releases in's ready scan chunks that no reader will
// read: every block served, stale, or wholly behind the run (in.mu held).
func (s *Store) scanPruneLocked(in *inode) {
	if len(in.scanReady) == 0 {
		return
	}
	r := &s.scan
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := 0; i < len(in.scanReady); {
		c := in.scanReady[i]
		if c.scan.served.covers(&c.scan.valid) || !in.scanUsableLocked(c.scan) ||
			c.end+readAheadBackBlocks <= in.raNext {
			in.scanDropLocked(r, c)
			continue
		}
		i++
	}
}

// scanDropAllLocked releases every ready scan chunk of in (in.mu held):
// it leaves the inode table.
func (s *Store) scanDropAllLocked(in *inode) {
	if len(in.scanReady) == 0 {
		return
	}
	r := &s.scan
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(in.scanReady) > 0 {
		in.scanDropLocked(r, in.scanReady[0])
	}
}

// scanChunksLocked counts in's scan chunks, in flight and ready (in.mu
// held).
func (in *inode) scanChunksLocked() int {
	n := len(in.scanReady)
	for _, c := range in.raFlight {
		if c.scan != nil {
			n++
		}
	}
	return n
}

// scanFilledLocked ends scan chunks whose device read is over (in.mu held, from
// the read's fill): a chunk that holds blocks and may still be read goes
// on the ready lists; any other gives its buffer back.
func (s *Store) scanFilledLocked(in *inode, chunks []*raChunk) {
	r := &s.scan
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range chunks {
		sc := c.scan
		if sc == nil {
			continue
		}
		if sc.valid.count() == 0 || !in.scanUsableLocked(sc) {
			r.putBufferLocked(sc)
			continue
		}
		sc.ready = true
		in.scanReady = append(in.scanReady, c)
		r.ready = append(r.ready, c)
	}
}

// scanInto returns where chunks' device reads of blocks [first,
// first+count) go: the buffer of the scan chunk that holds them.
func scanInto(chunks []*raChunk) func(first, count uint64) []byte {
	return func(first, count uint64) []byte {
		for _, c := range chunks {
			if first >= c.first && first+count <= c.end {
				off := (first - c.first) * blockSize
				return c.scan.buf[off : off+count*blockSize]
			}
		}
		panic("store: a scan read outside its chunks")
	}
}

// scanVerified records that the blocks of run r, verified, are in their
// chunk's buffer (data), zeroed past size: the device may hold stale
// bytes there, from before a truncate.
func scanVerified(chunks []*raChunk, size uint64) func(r blockRun, data []byte) {
	return func(r blockRun, data []byte) {
		for _, c := range chunks {
			if r.first < c.first || r.first >= c.end {
				continue
			}
			for i := range r.count {
				b := r.first + i
				if b*blockSize >= size {
					break
				}
				if end := size - b*blockSize; end < blockSize {
					clear(data[i*blockSize+end : (i+1)*blockSize])
				}
				c.scan.valid.set(b - c.first)
			}
			return
		}
	}
}

// scanStats returns how many of the ring's buffers chunks hold, and how
// many of those chunks are ready (CacheStats).
func (s *Store) scanStats() (held, ready int) {
	s.scan.mu.Lock()
	defer s.scan.mu.Unlock()
	return s.scan.held, len(s.scan.ready)
}
