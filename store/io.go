package store

import (
	"fmt"
	"sync"
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
	if in.isDir() {
		return 0, syscall.EISDIR
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
	switch wp := in.pages.wb[b]; {
	case wp != nil:
		copy(p.buf, wp.buf)
	case !whole && b*blockSize < in.size:
		if err := s.fillPage(in, b, p.buf); err != nil {
			freePage(p)
			return nil, false, err
		}
	}
	if len(in.pages.dirty) == 0 {
		in.pages.dirtySince = time.Now()
		s.wb.markDirty(in)
	}
	in.pages.dirty[b] = p
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
// where there are some, the device elsewhere, holes as zeros. It returns
// 0 at or past the end of the file. A block whose checksum does not match
// fails the read with EIO, and nothing of it is returned.
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
	if in.isDir() {
		return 0, syscall.EISDIR
	}
	in.mu.Lock()
	if in.deleted.Load() {
		in.mu.Unlock()
		return 0, syscall.ENOENT
	}
	if off >= in.size || len(buf) == 0 {
		in.mu.Unlock()
		return 0, nil
	}
	n := int(min(uint64(len(buf)), in.size-off))
	end := off + uint64(n)
	first, last := off/blockSize, (end-1)/blockSize
	// Runs of blocks with no buffered page come from the device.
	type run struct{ first, count uint64 }
	var missing []run
	for b := first; b <= last; b++ {
		bs := b * blockSize
		lo, hi := max(off, bs), min(end, bs+blockSize)
		if p := in.pages.lookup(b); p != nil {
			copy(buf[lo-off:hi-off], p.buf[lo-bs:hi-bs])
			continue
		}
		if k := len(missing); k > 0 && missing[k-1].first+missing[k-1].count == b {
			missing[k-1].count++
		} else {
			missing = append(missing, run{b, 1})
		}
	}
	in.mu.Unlock()
	if len(missing) == 0 {
		return n, nil
	}
	in.extMu.RLock()
	defer in.extMu.RUnlock()
	for _, r := range missing {
		for r.count > 0 {
			c := min(r.count, readChunkBlocks)
			tmp, staging := readStagingBuffer(int(c) * blockSize)
			if err := s.readBlocks(in, r.first, c, tmp); err != nil {
				putReadStaging(staging)
				return 0, err
			}
			bs := r.first * blockSize
			lo, hi := max(off, bs), min(end, bs+c*blockSize)
			copy(buf[lo-off:hi-off], tmp[lo-bs:hi-bs])
			putReadStaging(staging)
			r.first += c
			r.count -= c
		}
	}
	return n, nil
}

// readChunkBlocks bounds one device read of a file read (4 MiB).
const readChunkBlocks = 1024

// readStaging recycles the aligned buffers of large device reads (a
// fresh 1 MiB buffer costs its allocation and zeroing on every read).
var readStaging = sync.Pool{New: func() any {
	b := dev.AlignedBuffer(readChunkBlocks * blockSize)
	return &b
}}

// readStagingBuffer returns an aligned buffer of n bytes: from the pool
// (returned with putReadStaging) past 64 KiB, freshly allocated below.
func readStagingBuffer(n int) ([]byte, *[]byte) {
	if n <= 64<<10 {
		return dev.AlignedBuffer(n), nil
	}
	b := readStaging.Get().(*[]byte)
	return (*b)[:n], b
}

func putReadStaging(b *[]byte) {
	if b != nil {
		readStaging.Put(b)
	}
}

// readBlocks fills dst (count blocks, aligned) with blocks [first,
// first+count) of in from its extents — zeros for holes — and checks every
// block read against its checksum. extMu held (read or write).
func (s *Store) readBlocks(in *inode, first, count uint64, dst []byte) error {
	start, end := first*blockSize, (first+count)*blockSize
	xs, err := s.extentsIn(in.ino, start, end)
	if err != nil {
		return err
	}
	type piece struct {
		disk, off uint64 // device offset, offset in dst
		n         int    // blocks
	}
	var ios []dev.IO
	var pieces []piece
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
		p := piece{disk: uint64(f.x.DiskBytenr) + cutS - f.off, off: cutS - start, n: int((cutE - cutS) / blockSize)}
		if covered == p.off {
			covered += uint64(p.n) * blockSize
		}
		pieces = append(pieces, p)
		ios = append(ios, dev.IO{Off: int64(p.disk), Buf: dst[p.off : p.off+uint64(p.n)*blockSize]})
	}
	if inline != nil || covered != uint64(len(dst)) {
		clear(dst)
	}
	copy(dst, inline) // block 0 is dst's first block: start is 0
	if len(ios) == 0 {
		return nil
	}
	if err := s.dev.Read(ios); err != nil {
		s.log.Error("data read failed", "ino", in.ino, "offset", start, "err", err)
		return err
	}
	for _, p := range pieces {
		sums, err := s.lookupCsums(p.disk, p.n)
		if err != nil {
			s.log.Error("data checksums missing", "ino", in.ino, "err", err)
			return err
		}
		for i, want := range sums {
			blk := dst[p.off+uint64(i)*blockSize:][:blockSize]
			if got := engine.DataCsum(blk); got != want {
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
