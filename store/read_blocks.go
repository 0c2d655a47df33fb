package store

import (
	"fmt"

	"ustore/dev"
	"ustore/engine"
)

// Reading file blocks from the device: a read's missing runs (and its
// read-ahead) are mapped through the inode's extents, and every piece of
// every run goes to the device in one dev.Read — one ring submission with
// the io_uring device — then each block is checked against its checksum.

// blockRun is count blocks from first; ahead marks blocks read ahead,
// which no caller asked for: one that fails its checksum is left out, not
// an error of the read.
type blockRun struct {
	first, count uint64
	ahead        bool
}

// addBlock appends block b to runs, extending the last run when b follows
// it and is of the same kind.
func addBlock(runs []blockRun, b uint64, ahead bool) []blockRun {
	if k := len(runs); k > 0 && runs[k-1].first+runs[k-1].count == b && runs[k-1].ahead == ahead {
		runs[k-1].count++
		return runs
	}
	return append(runs, blockRun{b, 1, ahead})
}

// blocksIn returns how many blocks runs hold.
func blocksIn(runs []blockRun) uint64 {
	n := uint64(0)
	for _, r := range runs {
		n += r.count
	}
	return n
}

// readPieceBlocksMax bounds the blocks of one staging buffer (1 MiB: the
// protocol's largest read, and one chunk of read-ahead), and
// readSubmitBlocksMax those of one submission of a file read (8 MiB: a
// read and the read-ahead it carries, or a larger read, in one): a larger
// read is several.
const (
	readPieceBlocksMax  = 256
	readSubmitBlocksMax = 2048
)

// readStagingSet recycles the aligned buffers of large device reads (a
// fresh 1 MiB buffer costs its allocation and zeroing on every read): a
// free list of at most readStagingKept buffers of readPieceBlocksMax
// blocks, the store's own. It was a sync.Pool, which every collection
// empties: under the soft memory limit (Store.MemoryLimit) the collector
// runs every few reads, and each read allocated its buffers again — the
// churn that made writeback's staging break the memory bound
// (wbStagingSet). Unlike writeback's set it never waits: a read takes up
// to a submission's pieces one by one while holding extMu, so a reader
// waiting for a buffer another reader holds could wait on it forever. A
// buffer past the free list's room is made fresh and left to the
// collector. So the buffers in use are bounded as before — read-ahead's
// by its slots (readAheadInflightMax), a demand read's by its submission —
// and those kept, the same after any collection, by readStagingKept.
type readStagingSet struct {
	free chan *[]byte
}

// readStagingKept is how many read staging buffers a store keeps:
// readAheadChunksMax, one sequential reader's chunks in flight (4 MiB).
// More would be memory kept outside both budgets while nothing reads.
const readStagingKept = readAheadChunksMax

func (p *readStagingSet) init() { p.free = make(chan *[]byte, readStagingKept) }

// get returns an aligned buffer of n bytes (at most readPieceBlocksMax
// blocks): from the free list (given back with put) past 64 KiB, freshly
// made below.
func (p *readStagingSet) get(n int) ([]byte, *[]byte) {
	if n <= 64<<10 {
		return dev.AlignedBuffer(n), nil
	}
	select {
	case b := <-p.free:
		return (*b)[:n], b
	default:
		b := dev.AlignedBuffer(readPieceBlocksMax * blockSize)
		return b[:n], &b
	}
}

// put gives back a buffer get returned (nil for one it made below 64 KiB),
// kept if the free list has room.
func (p *readStagingSet) put(b *[]byte) {
	if b == nil {
		return
	}
	select {
	case p.free <- b:
	default:
	}
}

// readRuns reads runs of in (extMu held for reading) in submissions of at
// most readSubmitBlocksMax blocks, in pieces of at most
// readPieceBlocksMax, and calls fn with each piece and its verified
// bytes, valid only during the call.
func (s *Store) readRuns(in *inode, runs []blockRun, fn func(r blockRun, data []byte)) error {
	return s.readRunsTo(in, runs, nil, fn)
}

// readRunsTo is readRuns reading each piece into the buffer into returns
// for it (a scan chunk's), or into a staging buffer if into is nil.
func (s *Store) readRunsTo(in *inode, runs []blockRun, into func(first, count uint64) []byte, fn func(r blockRun, data []byte)) error {
	var (
		batch   []blockRead
		staging []*[]byte
		ios     []dev.IO
		blocks  uint64
	)
	flush := func() error {
		defer func() {
			for _, b := range staging {
				s.readStaging.put(b)
			}
			batch, staging, ios, blocks = batch[:0], staging[:0], ios[:0], 0
		}()
		if len(ios) > 0 {
			s.stats.readSubmissions.Add(1)
			if err := s.dev.Read(ios); err != nil {
				s.log.Error("data read failed", "ino", in.ino, "offset", batch[0].first*blockSize, "err", err)
				return err
			}
		}
		for i := range batch {
			r := &batch[i]
			if err := s.verifyRead(in, r); err != nil {
				if !r.ahead {
					return err
				}
				r.dst = nil // the next demand read of it will say
			}
		}
		for _, r := range batch {
			if r.dst != nil {
				fn(blockRun{r.first, r.count, r.ahead}, r.dst)
			}
		}
		return nil
	}
	for _, r := range runs {
		for r.count > 0 {
			c := min(r.count, readPieceBlocksMax, readSubmitBlocksMax-blocks)
			var dst []byte
			var st *[]byte
			if into != nil {
				dst = into(r.first, c)
			} else {
				dst, st = s.readStaging.get(int(c) * blockSize)
			}
			staging = append(staging, st)
			batch = append(batch, blockRead{first: r.first, count: c, ahead: r.ahead, dst: dst})
			var err error
			if ios, err = s.planRead(in, &batch[len(batch)-1], ios); err != nil {
				for _, b := range staging {
					s.readStaging.put(b)
				}
				return err
			}
			blocks += c
			r.first += c
			r.count -= c
			if blocks == readSubmitBlocksMax {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}

// blockRead is one run being read: its blocks, its buffer, and the
// device pieces planRead mapped it to.
type blockRead struct {
	first, count uint64
	ahead        bool   // read ahead: verifyRead is quiet about it
	dst          []byte // count blocks, aligned
	pieces       []readPiece
}

// readPiece is one extent's part of a blockRead.
type readPiece struct {
	disk, off uint64 // device offset, offset in dst
	n         int    // blocks
}

// readBlocks fills dst (count blocks, aligned) with blocks [first,
// first+count) of in from its extents — zeros for holes — and checks every
// block read against its checksum. extMu held (read or write).
func (s *Store) readBlocks(in *inode, first, count uint64, dst []byte) error {
	r := blockRead{first: first, count: count, dst: dst}
	ios, err := s.planRead(in, &r, nil)
	if err != nil {
		return err
	}
	if len(ios) > 0 {
		if err := s.dev.Read(ios); err != nil {
			s.log.Error("data read failed", "ino", in.ino, "offset", first*blockSize, "err", err)
			return err
		}
	}
	return s.verifyRead(in, &r)
}

// planRead maps r through in's extents: it appends to ios the device reads
// into r.dst, records them as r's pieces, and fills in what needs no
// device read — holes with zeros, an inline extent's bytes.
func (s *Store) planRead(in *inode, r *blockRead, ios []dev.IO) ([]dev.IO, error) {
	start, end := r.first*blockSize, (r.first+r.count)*blockSize
	xs, err := s.extentsIn(in.ino, start, end)
	if err != nil {
		return ios, err
	}
	dst := r.dst
	var inline []byte
	// dst is cleared (holes read as zeros) unless the extents cover it
	// end to end: a pooled buffer is not zero.
	covered := uint64(0)
	for _, f := range xs {
		if f.x.Type == engine.ExtentInline {
			inline = f.x.Data
			continue
		}
		cutS, cutE := max(f.off, start), min(f.end(), end)
		p := readPiece{disk: uint64(f.x.DiskBytenr) + cutS - f.off, off: cutS - start, n: int((cutE - cutS) / blockSize)}
		if covered == p.off {
			covered += uint64(p.n) * blockSize
		}
		r.pieces = append(r.pieces, p)
		ios = append(ios, dev.IO{Off: int64(p.disk), Buf: dst[p.off : p.off+uint64(p.n)*blockSize]})
	}
	if inline != nil || covered != uint64(len(dst)) {
		clear(dst)
	}
	copy(dst, inline) // block 0 is dst's first block: start is 0
	return ios, nil
}

// verifyRead checks every block r's pieces read against its checksum. A
// read-ahead run that fails is not logged or counted here: a demand read
// of the block will be.
func (s *Store) verifyRead(in *inode, r *blockRead) error {
	start := r.first * blockSize
	for _, p := range r.pieces {
		sums, err := s.lookupCsums(p.disk, p.n)
		if err != nil {
			s.log.Error("data checksums missing", "ino", in.ino, "err", err)
			return err
		}
		for i, want := range sums {
			blk := r.dst[p.off+uint64(i)*blockSize:][:blockSize]
			if got := engine.DataCsum(blk); got != want && r.ahead {
				return engine.ErrCorruption
			} else if got != want {
				fileOff := start + p.off + uint64(i)*blockSize
				bytenr := p.disk + uint64(i)*blockSize
				s.log.Error("data checksum mismatch", "ino", in.ino, "offset", fileOff, "bytenr", bytenr,
					"want", fmt.Sprintf("%08x", want), "got", fmt.Sprintf("%08x", got))
				s.stats.csumErrors.Add(1)
				return fmt.Errorf("%w: inode %d offset %d (block %d): data checksum %08x, expected %08x",
					engine.ErrCorruption, in.ino, fileOff, bytenr, got, want)
			}
		}
	}
	return nil
}
