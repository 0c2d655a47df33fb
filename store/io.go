package store

import (
	"errors"
	"syscall"
	"time"

	"ustore/dev"
	"ustore/engine"
)

// MaxFileSize is the largest file size (EFBIG beyond): 16 TiB, far above
// any device this version manages, and small enough that no offset
// arithmetic overflows.
const MaxFileSize = 1 << 44

// writeChunk bounds how much of one write is buffered under one hold of
// the inode lock and one budget reservation.
const writeChunk = 1 << 20

// Write copies data into file ino at off and returns how much it wrote.
// The bytes are in memory when it returns: durable after Fsync of the file,
// Sync, or a commit that follows their writeback.
func (s *Store) Write(ino Ino, off uint64, data []byte) (int, error) {
	n, err := s.write(ino, off, data)
	return n, opErr("write", ino, err)
}

func (s *Store) write(ino Ino, off uint64, data []byte) (int, error) {
	if err := s.writable(); err != nil {
		return 0, err
	}
	if len(data) > 0 && off >= MaxFileSize {
		return 0, syscall.EFBIG
	}
	// A write that would cross the limit is short (POSIX, Linux).
	data = data[:min(uint64(len(data)), MaxFileSize-min(off, MaxFileSize))]
	in, err := s.getLive(ino)
	if err != nil {
		return 0, err
	}
	defer s.itab.put(in)
	if err := in.regularOnly(); err != nil {
		return 0, err
	}
	done := 0
	for done < len(data) {
		pos := off + uint64(done)
		n := min(len(data)-done, writeChunk-int(pos%blockSize))
		if err := s.writeSome(in, pos, data[done:done+n]); err != nil {
			return done, err
		}
		done += n
	}
	return done, nil
}

// writeSome buffers one chunk: it reserves budget and space for every page
// the chunk might create (plus one for a zeroed tail) before taking the
// inode lock, then gives back what it did not use.
func (s *Store) writeSome(in *inode, off uint64, data []byte) error {
	first, last := off/blockSize, (off+uint64(len(data))-1)/blockSize
	reserved := int(last-first) + 2
	if err := s.wb.reserve(reserved, true); err != nil {
		return err
	}
	used := 0
	defer func() { s.wb.unreserve(reserved - used) }()
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.deleted.Load() {
		return syscall.ENOENT
	}
	if off > in.size && in.size%blockSize != 0 && in.size/blockSize < first {
		n, err := s.zeroTailLocked(in)
		used += n
		if err != nil {
			return err
		}
	}
	for b := first; b <= last; b++ {
		bs := b * blockSize
		lo := max(off, bs) - bs
		hi := min(off+uint64(len(data)), bs+blockSize) - bs
		p, created, err := s.dirtyPageLocked(in, b, lo == 0 && hi == blockSize)
		if created {
			used++
		}
		if err != nil {
			return err
		}
		copy(p.buf[lo:hi], data[bs+lo-off:])
	}
	if end := off + uint64(len(data)); end > in.size {
		in.size = end
	}
	t := now()
	in.item.Mtime, in.item.Ctime = t, t
	return nil
}

// dirtyPageLocked returns block b's dirty page, making it if needed
// (created): a copy of the page under writeback, or — unless the caller
// overwrites the whole block — the block's bytes read from the device,
// zeroed past the file's size. One unit of the caller's reservation pays
// for a created page.
func (s *Store) dirtyPageLocked(in *inode, b uint64, whole bool) (p *page, created bool, err error) {
	if p := in.pages.dirty[b]; p != nil {
		return p, false, nil
	}
	p = newPage()
	epoch := s.epochLocked(in)
	switch wp := in.pages.wb[b]; {
	case wp != nil:
		copy(p.buf, wp.buf)
	case !whole && b*blockSize < in.size:
		if c := s.pc.get(epoch, b); c != nil {
			copy(p.buf, c)
			s.stats.pageHits.Add(1)
			break
		}
		if err := s.fillPage(in, b, p.buf); err != nil {
			freePage(p)
			return nil, false, err
		}
	}
	// The cached copy of the block is stale from now on; a read of the
	// device that began before this write must not cache it either.
	s.pc.remove(epoch, b)
	in.cacheSeq++
	s.scanPruneLocked(in) // a scan's chunks of the file are stale now
	if len(in.pages.dirty) == 0 {
		in.pages.dirtySince = time.Now()
		s.wb.markDirty(in)
	}
	in.pages.dirty[b] = p
	s.itab.rechargeLocked(in)
	return p, true, nil
}

// zeroTailLocked makes the block holding the end of the file dirty with
// zeros after the end, before the file grows past it: the device copy of
// that block may hold bytes from before a truncate, which must read as
// zeros once the size covers them. It returns how many pages it made.
func (s *Store) zeroTailLocked(in *inode) (int, error) {
	b := in.size / blockSize
	p, created, err := s.dirtyPageLocked(in, b, false)
	n := 0
	if created {
		n = 1
	}
	if err != nil {
		return n, err
	}
	clear(p.buf[in.size%blockSize:])
	return n, nil
}

// fillPage reads block b of in from the device into buf, zeroed past the
// file's size (in.mu held).
func (s *Store) fillPage(in *inode, b uint64, buf []byte) error {
	tmp := dev.AlignedBuffer(blockSize)
	in.extMu.RLock()
	err := s.readBlocks(in, b, 1, tmp)
	in.extMu.RUnlock()
	if err != nil {
		return err
	}
	copy(buf, tmp)
	if end := in.size; end < (b+1)*blockSize {
		clear(buf[end-b*blockSize:])
	}
	return nil
}

// Read reads up to len(buf) bytes of file ino at off: buffered pages
// where there are some, then the page cache, the device elsewhere, holes
// as zeros. It returns 0 at or past the end of the file. A block whose
// checksum does not match fails the read with EIO, and nothing of it is
// returned.
func (s *Store) Read(ino Ino, off uint64, buf []byte) (int, error) {
	n, err := s.read(ino, off, buf)
	return n, opErr("read", ino, err)
}

func (s *Store) read(ino Ino, off uint64, buf []byte) (int, error) {
	in, err := s.getLive(ino)
	if err != nil {
		return 0, err
	}
	defer s.itab.put(in)
	if err := in.regularOnly(); err != nil {
		return 0, err
	}
	// A read waits at most once for read-ahead in flight (read_ahead.go);
	// what is still missing after that comes from the device.
	for waited := false; ; waited = true {
		n, done, err := s.readOnce(in, off, buf, waited)
		if done {
			return n, err
		}
	}
}

// readOnce is one pass of a read: it returns done false, having waited for
// the read-ahead in flight that holds blocks it misses, when the read
// should look again (only if !waited).
func (s *Store) readOnce(in *inode, off uint64, buf []byte, waited bool) (n int, done bool, err error) {
	in.mu.Lock()
	if in.deleted.Load() {
		in.mu.Unlock()
		return 0, true, syscall.ENOENT
	}
	if off >= in.size || len(buf) == 0 {
		in.mu.Unlock()
		return 0, true, nil
	}
	n = int(min(uint64(len(buf)), in.size-off))
	end := off + uint64(n)
	first, last := off/blockSize, (end-1)/blockSize
	epoch := s.epochLocked(in)
	// Runs of blocks with neither a buffered nor a cached page come from
	// the device.
	var missing []blockRun
	var hits, scanned uint64
	for b := first; b <= last; b++ {
		bs := b * blockSize
		lo, hi := max(off, bs), min(end, bs+blockSize)
		if p := in.pages.lookup(b); p != nil {
			copy(buf[lo-off:hi-off], p.buf[lo-bs:hi-bs])
			continue
		}
		if c := in.scanBlockLocked(b); c != nil {
			copy(buf[lo-off:hi-off], c[lo-bs:hi-bs])
			scanned++
			continue
		}
		if c := s.pc.get(epoch, b); c != nil {
			copy(buf[lo-off:hi-off], c[lo-bs:hi-bs])
			hits++
			continue
		}
		missing = addBlock(missing, b, false)
	}
	if !waited {
		if w := in.readAheadWaitLocked(missing); len(w) > 0 {
			in.mu.Unlock()
			s.stats.readAheadWaits.Add(1)
			for _, c := range w {
				<-c.done
			}
			return 0, false, nil
		}
	}
	s.stats.pageHits.Add(hits)
	s.stats.pageMisses.Add(blocksIn(missing))
	s.stats.scanBlocks.Add(scanned)
	fill := cacheFill{epoch: epoch, seq: in.cacheSeq, size: in.size}
	var chunks []*raChunk
	var ahead []blockRun
	// A read that starts a run carries its first chunk of read-ahead in
	// its own submission; later ones leave the window's top-up to the
	// background, so that no read waits for more than its own blocks. A
	// scan's read caches nothing and carries nothing: its chunks go to
	// the scan ring, in the background (scan_ring.go).
	// The chunks this read finished go before new ones take buffers.
	if scanned > 0 {
		s.scanServedLocked(in, first, last)
	}
	carry, scan := false, false
	if seq, gap := in.sequentialLocked(first, last); seq {
		scan = s.scanLocked(in)
		carry = !scan && in.raChunks == 1 && len(missing) > 0
		chunks, ahead = s.readAheadLocked(in, epoch, first, last, gap)
	}
	in.mu.Unlock()
	if !carry {
		s.readAheadStart(in, chunks, ahead, fill)
		chunks, ahead = nil, nil
	}
	if len(missing) == 0 {
		return n, true, nil
	}

	demand := len(missing)
	missing = append(missing, ahead...)
	// deliver copies a piece's part of [off, end) into buf (read-ahead
	// has none) and keeps the piece for the cache.
	deliver := func(r blockRun, data []byte) {
		bs := r.first * blockSize
		lo, hi := max(off, bs), min(end, bs+uint64(len(data)))
		if lo < hi {
			copy(buf[lo-off:hi-off], data[lo-bs:hi-bs])
		}
		if !scan {
			fill.keep(r, data)
		}
	}
	in.extMu.RLock()
	err = s.readRuns(in, missing, deliver)
	if err != nil && len(missing) != demand && !errors.Is(err, engine.ErrCorruption) {
		// The device failed a submission that read ahead too: whether
		// the read's own blocks fail is for a read of them alone to say.
		// (A checksum failure of the read's own blocks is theirs.)
		fill.blocks, fill.bufs = nil, nil
		err = s.readRuns(in, missing[:demand], deliver)
	}
	in.extMu.RUnlock()
	if err != nil {
		fill.blocks, fill.bufs = nil, nil
		s.readCacheFill(in, &fill, chunks)
		return 0, true, err
	}
	if testHookBeforeFill != nil {
		testHookBeforeFill(in.ino)
	}
	s.readCacheFill(in, &fill, chunks)
	return n, true, nil
}
