package store

import (
	"time"

	"ustore/engine"
)

// truncateLocked sets in's size (wbMu and mu held, tr running). Shrinking
// drops the pages and extents past the new end and zeroes the rest of the
// last block in memory; growing needs the old last block's tail zeroed
// first (growTailLocked, before the transaction starts). The size reaches
// the tree with this operation's transaction — but while pages are
// buffered it never grows there: the device may hold stale bytes past the
// old end (a shrink leaves its last block as it was) that only the zeroed
// tail page, not yet written, hides; writeback's last batch moves it up.
func (s *Store) truncateLocked(tr *engine.Trans, in *inode, size uint64) error {
	switch {
	case size < in.size:
		keep := (size + blockSize - 1) / blockSize
		s.dropPages(in, keep)
		if size%blockSize != 0 {
			if p := in.pages.lookup(size / blockSize); p != nil {
				clear(p.buf[size%blockSize:])
			}
		}
		in.extMu.Lock()
		freed, err := s.dropExtents(tr, in, keep*blockSize, ^uint64(0))
		if err == nil && size < blockSize {
			var f uint64
			f, err = s.truncateInline(tr, in, size)
			freed += f
		}
		in.extMu.Unlock()
		in.item.Nbytes -= min(freed, in.item.Nbytes)
		if err != nil {
			return err
		}
	}
	in.size = size
	if in.pages.empty() {
		in.diskSize = size
	} else {
		in.diskSize = min(in.diskSize, size)
	}
	return nil
}

// dropPages drops in's buffered pages from block first on (mu held; no
// writeback running: wbMu held by the caller), and their budget, and
// every block of in the page cache holds.
func (s *Store) dropPages(in *inode, first uint64) {
	s.dropPageRange(in, first, ^uint64(0))
}

// dropPageRange is dropPages for the blocks [first, last) (a punched
// hole's).
func (s *Store) dropPageRange(in *inode, first, last uint64) {
	// The cached blocks go too, all at once (a new epoch): those outside
	// the range are still right, but a shrink, a punch or a deletion is
	// rare next to the reads that would pay for keeping them.
	s.invalidateLocked(in)
	n := 0
	if first == 0 && last == ^uint64(0) {
		// The whole state goes: drop the maps whole, not page by page.
		n = len(in.pages.dirty) + len(in.pages.wb)
		in.pages.init()
	}
	for _, m := range []map[uint64]*page{in.pages.dirty, in.pages.wb} {
		for b, p := range m {
			if b >= first && b < last {
				delete(m, b)
				freePage(p)
				n++
			}
		}
	}
	s.wb.unreserve(n)
	if len(in.pages.dirty) == 0 {
		in.pages.dirtySince = time.Time{}
		if in.pages.empty() {
			s.wb.markClean(in)
		}
	}
}

// growTailLocked prepares in to grow to size (mu held, before the
// operation's transaction starts: it may fail with ENOSPC or EIO, and
// must fail before any tree change): the old last block's tail is zeroed
// in a dirty page.
func (s *Store) growTailLocked(in *inode, size uint64) error {
	if size <= in.size || in.size%blockSize == 0 {
		return nil
	}
	if err := s.wb.reserve(1, false); err != nil {
		return err
	}
	n, err := s.zeroTailLocked(in)
	s.wb.unreserve(1 - n)
	return err
}
