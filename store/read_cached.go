package store

// ReadCached is Read for a caller that must not wait: the server's
// connection reader, which serves a read itself when the store can answer
// it from memory (server/conn_inline.go), and hands it to a worker
// otherwise. It reads up to len(buf) bytes of file ino at off if every
// block of the range is a buffered page or in the page cache, and returns
// how many with ok; 0 and ok at or past the end of the file. Otherwise it
// returns ok false, having changed nothing the next Read depends on: the
// caller reads with Read, which answers what ReadCached did not (an inode
// not in memory, a directory or a symbolic link, a deleted file, a block
// to read from the device).
//
// It never waits for a lock that a holder keeps across I/O and never
// touches the device: the inode must be in the inode table already (no
// load), its mu free (TryLock: a writer, a truncate or a read filling the
// cache holds it), and no block missing. The page cache's shard locks it
// takes are held by others only for a map operation. A read of a
// sequential run tops up the run's read-ahead as Read does, in the
// background (read_ahead.go): the device keeps working while a reader
// is served from what it read before.
//
// It holds no reference on the inode: the table evicts no inode whose mu
// is held (inodeTable.tryEvict), so once mu is held the inode is the
// table's, checked by finding it there again, and stays so until mu is
// given back. Under mu it follows Read's own rules for what it finds in
// memory — buffered pages before the cache, the inode's epoch — so it is
// never stale for the reason Read is not (invariant 13).
func (s *Store) ReadCached(ino Ino, off uint64, buf []byte) (n int, ok bool) {
	in := s.itab.peek(ino)
	if testHookReadCachedPeeked != nil {
		testHookReadCachedPeeked(ino)
	}
	if in == nil || in.regularOnly() != nil || !in.mu.TryLock() {
		return 0, false
	}
	n, ok, fill, chunks, ahead := s.readCachedLocked(in, off, buf)
	in.mu.Unlock()
	s.readAheadStart(in, chunks, ahead, fill)
	return n, ok
}

// readCachedLocked is ReadCached under in.mu; it returns the read-ahead
// to start once mu is given back.
func (s *Store) readCachedLocked(in *inode, off uint64, buf []byte) (n int, ok bool, fill cacheFill, chunks []*raChunk, ahead []blockRun) {
	if s.itab.peek(in.ino) != in || in.deleted.Load() {
		// Evicted (and perhaps loaded again) since the peek, or gone.
		return 0, false, fill, nil, nil
	}
	if off >= in.size || len(buf) == 0 {
		s.stats.cachedReads.Add(1)
		return 0, true, fill, nil, nil
	}
	n = int(min(uint64(len(buf)), in.size-off))
	end := off + uint64(n)
	first, last := off/blockSize, (end-1)/blockSize
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
		// Epoch 0 was never given: an inode that has not used the cache
		// has nothing in it.
		c := []byte(nil)
		if in.epoch != 0 {
			c = s.pc.get(in.epoch, b)
		}
		if c == nil {
			return 0, false, fill, nil, nil
		}
		copy(buf[lo-off:hi-off], c[lo-bs:hi-bs])
		hits++
	}
	s.stats.pageHits.Add(hits)
	s.stats.scanBlocks.Add(scanned)
	s.stats.cachedReads.Add(1)
	if scanned > 0 {
		s.scanServedLocked(in, first, last)
	}
	// As Read: the run goes on, and its read-ahead with it.
	if seq, gap := in.sequentialLocked(first, last); seq {
		epoch := s.epochLocked(in)
		fill = cacheFill{epoch: epoch, seq: in.cacheSeq, size: in.size}
		chunks, ahead = s.readAheadLocked(in, epoch, first, last, gap)
	}
	return n, true, fill, chunks, ahead
}

// testHookReadCachedPeeked, set by a test, runs in ReadCached between its
// look-up of the inode and its lock: where the inode can leave the table
// (TestStore_ReadCached_EvictedAfterPeek).
var testHookReadCachedPeeked func(Ino)
