package store

// Read-ahead and filling the page cache after a device read.

// readAheadBlocks is how far past a sequential read's end the read goes on
// (1 MiB): the blocks come in the same submission as the read's own, and
// the next sequential read finds them cached. A read starts a sequential
// run when it begins at the block after the inode's previous read.
const readAheadBlocks = 256

// readAheadLocked extends missing, the runs a read at last (its last
// block) will fetch, with the blocks after last up to readAheadBlocks of
// them, within the file's size, stopping at the first that is buffered or
// cached already (in.mu held).
func (s *Store) readAheadLocked(in *inode, epoch uint64, missing []blockRun, last uint64) []blockRun {
	if in.size == 0 {
		return missing
	}
	lastBlock := (in.size - 1) / blockSize
	n := uint64(0)
	for b := last + 1; b <= lastBlock && n < readAheadBlocks; b++ {
		if in.pages.lookup(b) != nil || s.pc.get(epoch, b) != nil {
			break
		}
		missing = addBlock(missing, b, true)
		n++
	}
	s.stats.readAheadBlocks.Add(n)
	return missing
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

// testHookBeforeDeviceRead, set by a test, runs in a read between its
// snapshot of the pages and the cache (in.mu released) and its mapping of
// the blocks it misses (extMu not yet taken): where a write and its fsync
// can map a block anew (TestFsyncData_Read_SnapshotBeforeWrite).
var testHookBeforeDeviceRead func(Ino)

// readCacheFill caches what f kept, unless a block of in was dirtied, or
// its epoch changed, since the read took its snapshot: its device bytes
// may then be older than what a writer has since put in the cache.
func (s *Store) readCacheFill(in *inode, f *cacheFill) {
	if len(f.blocks) == 0 {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cacheSeq != f.seq || in.epoch != f.epoch || in.deleted.Load() {
		return
	}
	for i, b := range f.blocks {
		s.pc.add(f.epoch, b, f.bufs[i])
	}
}
