package store

import (
	"sync"
	"time"

	"ustore/engine"
)

// blockSize is the unit of buffered data, of allocation and of checksums.
const blockSize = engine.SectorSize

// BlockSize is blockSize, for the server: a write of whole blocks reads
// nothing from the device.
const BlockSize = blockSize

// page is one block of a file's buffered data. Every byte of a page beyond
// the file's size is zero: truncate zeroes them, and a page filled from
// the device is zeroed past the size.
type page struct {
	buf []byte // blockSize bytes
}

var pagePool = sync.Pool{New: func() any { return &page{buf: make([]byte, blockSize)} }}

func newPage() *page { return pagePool.Get().(*page) }

func freePage(p *page) {
	clear(p.buf)
	pagePool.Put(p)
}

// pageState is an inode's range state (btrfs: the extent_io_tree of its
// pages): which blocks are dirty — written by a client, not yet written
// back — and which are under writeback — on their way to the device, still
// what readers see until their extents are in the tree. A block is in both
// maps only when a client wrote it again during its writeback: the dirty
// page is then the newer. Guarded by inode.mu.
type pageState struct {
	dirty map[uint64]*page // block index → page
	wb    map[uint64]*page
	// dirtySince is when the oldest dirty page became dirty (zero: none).
	dirtySince time.Time
	// dirtyPeak and wbPeak are the most entries each map has held since
	// it was made: a Go map keeps the memory of its largest size, and the
	// inode is charged for it (inode_charge.go). Brought up to date by
	// notePeaks.
	dirtyPeak, wbPeak int
}

// init makes both maps afresh: their old memory goes with the old maps.
func (ps *pageState) init() {
	ps.dirty = map[uint64]*page{}
	ps.wb = map[uint64]*page{}
	ps.dirtyPeak, ps.wbPeak = 0, 0
}

// notePeaks raises the peaks to the maps' sizes now, and reports whether
// either rose.
func (ps *pageState) notePeaks() bool {
	d, w := max(ps.dirtyPeak, len(ps.dirty)), max(ps.wbPeak, len(ps.wb))
	rose := d != ps.dirtyPeak || w != ps.wbPeak
	ps.dirtyPeak, ps.wbPeak = d, w
	return rose
}

func (ps *pageState) empty() bool { return len(ps.dirty) == 0 && len(ps.wb) == 0 }

// lookup returns the newest buffered page of block b.
func (ps *pageState) lookup(b uint64) *page {
	if p := ps.dirty[b]; p != nil {
		return p
	}
	return ps.wb[b]
}
