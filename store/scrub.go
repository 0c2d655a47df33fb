package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"ustore/dev"
	"ustore/engine"
)

// Scrub is fsck --data: it reads every data block a file extent references
// and checks it against its stored checksum — what Check, which reads only
// tree nodes, cannot see (a flipped bit in a data block reads back as EIO,
// yet the trees are clean). Extents are taken from the fs tree in key
// order, cut into pieces of at most scrubPieceBytes, and read in batches of
// up to scrubBatchBytes (one Read call: the device submits the batch's
// reads together), scrubBatchesInFlight batches at a time. A piece whose
// read fails is read again block by block, so that the report names the
// unreadable blocks themselves. Inline extents live in checksummed leaves,
// which Check reads.

const (
	// scrubPieceBytes bounds one read: the largest extent writeback makes.
	scrubPieceBytes = 1 << 20
	// scrubBatchBytes bounds one batch, and so one worker's buffer.
	scrubBatchBytes = 4 << 20
	// scrubBatchesInFlight: batches read at once; with scrubBatchBytes it
	// bounds the scrub's memory (16 MiB) and keeps the device's queue busy.
	scrubBatchesInFlight = 4
	// scrubBadMax bounds the blocks a report lists (all are counted).
	scrubBadMax = 1000
)

// BadBlock is a data block that failed its check.
type BadBlock struct {
	Ino    Ino
	Offset uint64   // in the file
	Bytenr uint64   // on the device
	Paths  []string // the file's names; none if they could not be read
	Err    error
}

func (b BadBlock) String() string {
	return fmt.Sprintf("inode %d offset %d (device block %d) %v: %v", b.Ino, b.Offset, b.Bytenr, b.Paths, b.Err)
}

// ScrubReport is what Scrub found.
type ScrubReport struct {
	Extents  int           // regular file extents read
	Bytes    uint64        // data bytes read and checked
	Took     time.Duration // wall time of the scrub
	Bad      []BadBlock    // the first scrubBadMax bad blocks, by inode and offset
	BadCount int           // every bad block
}

// Err is nil when every block matched its checksum.
func (r *ScrubReport) Err() error {
	if r.BadCount == 0 {
		return nil
	}
	errs := make([]error, 0, len(r.Bad)+1)
	for _, b := range r.Bad {
		errs = append(errs, errors.New(b.String()))
	}
	if cut := r.BadCount - len(r.Bad); cut > 0 {
		errs = append(errs, fmt.Errorf("... and %d more bad blocks", cut))
	}
	return errors.Join(errs...)
}

// scrubPiece is up to scrubPieceBytes of one extent.
type scrubPiece struct {
	ino       Ino
	off, disk uint64 // file offset, device offset
	blocks    int
}

// Scrub reads and checks every data block of a quiescent store (as Check).
// An error means the scrub could not run to its end (the fs tree could not
// be read, ctx ended); bad blocks are in the report.
func (s *Store) Scrub(ctx context.Context) (*ScrubReport, error) {
	start := time.Now()
	r := &ScrubReport{}
	var mu sync.Mutex // guards r's Bad and BadCount, and Bytes
	bad := func(b BadBlock) {
		mu.Lock()
		defer mu.Unlock()
		r.BadCount++
		if len(r.Bad) < scrubBadMax {
			r.Bad = append(r.Bad, b)
		}
	}
	batches := make(chan []scrubPiece, scrubBatchesInFlight)
	var wg sync.WaitGroup
	for range scrubBatchesInFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := dev.AlignedBuffer(scrubBatchBytes)
			for batch := range batches {
				n := s.scrubBatch(batch, buf, bad)
				mu.Lock()
				r.Bytes += n
				mu.Unlock()
			}
		}()
	}
	err := s.scrubExtents(ctx, batches, &r.Extents)
	close(batches)
	wg.Wait()
	sort.Slice(r.Bad, func(i, j int) bool {
		a, b := r.Bad[i], r.Bad[j]
		return a.Ino < b.Ino || a.Ino == b.Ino && a.Offset < b.Offset
	})
	paths := map[Ino][]string{}
	for i := range r.Bad {
		ino := r.Bad[i].Ino
		if _, ok := paths[ino]; !ok {
			paths[ino], _ = s.pathsOf(ino)
		}
		r.Bad[i].Paths = paths[ino]
	}
	r.Took = time.Since(start)
	return r, err
}

// scrubExtents walks the fs tree's regular extents and sends them to
// batches, cut into pieces. It stops the walk at each full batch and
// resumes where it stopped (skip bytes into the extent at from): no tree
// lock is held while a send waits for a worker. An extent outside the
// device is not read: Check reports it.
func (s *Store) scrubExtents(ctx context.Context, batches chan<- []scrubPiece, extents *int) error {
	from, skip := engine.MinKey, uint64(0)
	devSize := uint64(s.dev.Size())
	for done := false; !done; {
		if err := ctx.Err(); err != nil {
			return err
		}
		var batch []scrubPiece
		var bytes uint64
		var derr error
		done = true
		err := s.fs.Iterate(from, func(k engine.Key, b []byte) bool {
			if k.Type != engine.TypeExtentData {
				return true
			}
			x, err := engine.DecodeFileExtent(b)
			if err != nil {
				derr = fmt.Errorf("item %v: %w", k, err)
				return false
			}
			if x.Type != engine.ExtentRegular || !extentOnDevice(x, devSize) {
				return true
			}
			o := uint64(0)
			if k == from {
				o = skip
			} else {
				*extents++
			}
			for ; o < x.NumBytes; o += scrubPieceBytes {
				if bytes+scrubPieceBytes > scrubBatchBytes {
					from, skip, done = k, o, false
					return false
				}
				n := min(x.NumBytes-o, scrubPieceBytes)
				batch = append(batch, scrubPiece{ino: k.Ino(), off: k.Offset + o, disk: uint64(x.DiskBytenr) + o, blocks: int(n / blockSize)})
				bytes += n
			}
			return true
		})
		if err == nil {
			err = derr
		}
		if err != nil {
			return fmt.Errorf("store: scrub: reading the extents: %w", err)
		}
		if len(batch) > 0 {
			batches <- batch
		}
	}
	return nil
}

// scrubBatch reads one batch into buf and checks each block; it returns
// the bytes it checked. A piece whose read failed is read again block by
// block: the blocks that fail again are reported unreadable, the others
// checked.
func (s *Store) scrubBatch(batch []scrubPiece, buf []byte, bad func(BadBlock)) uint64 {
	ios := make([]dev.IO, len(batch))
	at := 0
	for i, p := range batch {
		n := p.blocks * blockSize
		ios[i] = dev.IO{Off: int64(p.disk), Buf: buf[at : at+n]}
		at += n
	}
	_ = s.dev.Read(ios) // each IO carries its own error
	var checked uint64
	for i, p := range batch {
		var unreadable map[int]bool
		if ios[i].Err != nil {
			unreadable = s.scrubReread(p, ios[i].Buf, bad)
		}
		sums, err := s.lookupCsums(p.disk, p.blocks)
		if err != nil {
			bad(BadBlock{Ino: p.ino, Offset: p.off, Bytenr: p.disk, Err: err})
			continue
		}
		for b, want := range sums {
			if unreadable[b] {
				continue
			}
			blk := ios[i].Buf[b*blockSize:][:blockSize]
			if got := engine.DataCsum(blk); got != want {
				bad(BadBlock{Ino: p.ino, Offset: p.off + uint64(b)*blockSize, Bytenr: p.disk + uint64(b)*blockSize,
					Err: fmt.Errorf("%w: data checksum %08x, expected %08x", engine.ErrCorruption, got, want)})
			}
			checked += blockSize
		}
	}
	return checked
}

// scrubReread reads piece p's blocks one by one into buf, reports those
// whose read fails, and returns them.
func (s *Store) scrubReread(p scrubPiece, buf []byte, bad func(BadBlock)) map[int]bool {
	failed := map[int]bool{}
	for b := range p.blocks {
		off := uint64(b) * blockSize
		if err := s.dev.Read([]dev.IO{{Off: int64(p.disk + off), Buf: buf[off : off+blockSize]}}); err != nil {
			failed[b] = true
			bad(BadBlock{Ino: p.ino, Offset: p.off + off, Bytenr: p.disk + off, Err: err})
		}
	}
	return failed
}
