package store

import (
	"sync/atomic"

	"ustore/evict"
)

// The page cache: clean blocks of file data kept in memory after a read
// (their checksums verified) and after writeback (the bytes just written),
// so that reading them again needs no device round trip. It is an
// evict.Cache that shares the engine's node cache budget (--cache-size),
// with the in-memory inodes too (itable.go): one SIEVE over nodes, pages
// and inodes, so that whichever are used stay.
//
// Keys. A cached block is named by its inode's cache epoch and its block
// index. An in-memory inode gets a fresh epoch from a store-wide counter
// when it first uses the cache (epochLocked), and another whenever its
// cached blocks must all go at once — a truncate that shrinks it, its
// deletion (unlink, rename over it): the old entries can then never be
// looked up again and the hand, finding them unreferenced, evicts them
// when it reaches them. Dropping an inode's cached data is so O(1),
// whatever its size: the 2013 btrfs patch "fix very slow inode eviction
// and fs unmount" was about exactly that teardown done page by page. An
// inode evicted from the inode table leaves its epoch there
// (kept_epochs.go) and continues it when loaded again, so its blocks
// still cached are found: nothing changes a file while its inode is out
// of memory (store/doc.go, invariant 17). One whose epoch was not kept
// gets a fresh one, which is always safe. The epoch and the block are
// mixed into the cache's uint64 key; an entry also holds both, and a
// lookup that finds another block's entry under its key (a collision of
// the mix) is a miss.
//
// Staleness. Readers look at an inode's buffered pages (dirty, under
// writeback) before the cache, so a block written since it was cached is
// read from its buffered page until writeback puts the new bytes in the
// cache. A read that misses reads the device with no inode lock held; it
// may cache what it read only if nothing dirtied a block of the inode or
// changed its epoch meanwhile: every new dirty page and every epoch change
// bumps the inode's cacheSeq (under its mu), and the reader compares it,
// under mu, with the value it saw before reading (readCacheFill).
type pageCache struct {
	c      *evict.Cache[*cleanPage]
	epochs atomic.Uint64
}

// cleanPage is one cached block. buf is never written once the page is
// cached: readers copy out of it with no lock.
type cleanPage struct {
	epoch, block uint64
	buf          []byte // blockSize bytes, zero past the file's size
}

// cleanPageBytes is what a cached block is charged: its buffer, the entry
// and the cache's item and map slot.
const cleanPageBytes = blockSize + 128

func (p *cleanPage) CacheBytes() int64 { return cleanPageBytes }

// Pinned: a clean page can always be dropped (dirty data is not here: it
// has the dirty budget and writeback).
func (p *cleanPage) Pinned() bool { return false }

func newPageCache(b *evict.Budget) *pageCache {
	return &pageCache{c: evict.New[*cleanPage](evict.Options{Budget: b, NeverPinned: true})}
}

// newEpoch returns an epoch no inode has had in this mount.
func (pc *pageCache) newEpoch() uint64 { return pc.epochs.Add(1) }

// pageKey mixes an epoch and a block into the cache's key (splitmix64's
// finaliser over both).
func pageKey(epoch, block uint64) uint64 {
	z := epoch*0x9E3779B97F4A7C15 ^ block
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// get returns block's cached bytes for epoch, or nil.
func (pc *pageCache) get(epoch, block uint64) []byte {
	p, ok := pc.c.Get(pageKey(epoch, block))
	if !ok || p.epoch != epoch || p.block != block {
		return nil
	}
	return p.buf
}

// add caches buf (blockSize bytes, which the caller gives up) as block of
// epoch.
func (pc *pageCache) add(epoch, block uint64, buf []byte) {
	pc.c.Add(pageKey(epoch, block), &cleanPage{epoch: epoch, block: block, buf: buf})
}

// remove drops block of epoch from the cache, if it is there.
func (pc *pageCache) remove(epoch, block uint64) {
	pc.c.Remove(pageKey(epoch, block))
}

// epochLocked returns in's cache epoch, giving it one on first use (in.mu
// held): inodes are made in several places (loaded, created, replayed from
// the log), and none of them may share an epoch.
func (s *Store) epochLocked(in *inode) uint64 {
	if in.epoch == 0 {
		in.epoch = s.pc.newEpoch()
	}
	return in.epoch
}

// invalidateLocked makes every block cached for in unreachable at once: a
// new epoch (in.mu held). With the per-range teardown ablation it removes
// them one block at a time instead, over the file's whole size, as a
// page-by-page invalidation does (benchmarks only).
func (s *Store) invalidateLocked(in *inode) {
	if s.opts.TeardownPerRange && in.epoch != 0 {
		s.teardownPerRange(in)
	}
	in.epoch = s.pc.newEpoch()
	in.cacheSeq++
	s.scanPruneLocked(in) // and a scan's chunks of it
}

// teardownPerRange is the ablation of bulk teardown: every block of in's
// size is looked up and removed from the cache one by one.
func (s *Store) teardownPerRange(in *inode) {
	for b := range (in.size + blockSize - 1) / blockSize {
		s.pc.remove(in.epoch, b)
		s.stats.teardownSteps.Add(1)
	}
}

// CacheStats are the page cache's and the shared budget's figures (served
// on /metrics as ustore_store_cache_*: the tags say which are gauges).
type CacheStats struct {
	// BudgetBytes is --cache-size; Bytes what nodes, pages and inodes
	// hold of it now (their sum, exactly), NodeBytes, PageBytes and
	// InodeBytes each part, Pages the cached data blocks, Inodes the
	// inodes in memory (each charged, inode_charge.go).
	BudgetBytes int64 `metric:"gauge"`
	Bytes       int64 `metric:"gauge"`
	NodeBytes   int64 `metric:"gauge"`
	PageBytes   int64 `metric:"gauge"`
	InodeBytes  int64 `metric:"gauge"`
	Pages       int64 `metric:"gauge"`
	Inodes      int64 `metric:"gauge"`
	// PageHits and PageMisses count block lookups in the page cache by
	// reads that found no buffered page (the hit ratio is hits over
	// both); ReadAheadBlocks the blocks read ahead of a sequential
	// reader. CachedReads counts the reads ReadCached served (their
	// blocks are among PageHits).
	PageHits, PageMisses, ReadAheadBlocks, CachedReads uint64
	// ReadSubmissions counts the device submissions of file reads (a
	// read's own blocks, with or without read-ahead, and read-ahead
	// alone); ReadAheadSubmissions those read-ahead made in the
	// background; ReadAheadWaits the reads that waited for a chunk of
	// read-ahead in flight instead of reading its blocks again.
	ReadSubmissions, ReadAheadSubmissions, ReadAheadWaits uint64
	// ReadAheadChunks is how many chunks of read-ahead are in flight now.
	ReadAheadChunks int64 `metric:"gauge"`
	// ScanBlocks counts the blocks reads took from a scan's chunks
	// (scan_ring.go), not the cache; ScanReclaims the chunks a scan took
	// from another inode's for want of a free buffer. ScanBuffers is how
	// many of the ring's buffers chunks hold now, ScanReady how many of
	// those chunks hold blocks for readers.
	ScanBlocks, ScanReclaims uint64
	ScanBuffers, ScanReady   int `metric:"gauge"`
	// Evictions counts data pages the hand (or Clear) dropped;
	// InodeEvictions the inodes it dropped.
	Evictions, InodeEvictions int64
	// EpochsKept is how many evicted inodes' epochs the inode table
	// holds now; EpochsResumed counts inodes loaded again that continued
	// theirs (kept_epochs.go).
	EpochsKept    int `metric:"gauge"`
	EpochsResumed uint64
}

// CacheStats returns the page cache's figures.
func (s *Store) CacheStats() CacheStats {
	st, ist := s.pc.c.Stats(), s.itab.c.Stats()
	scanHeld, scanReady := s.scanStats()
	return CacheStats{
		ScanBlocks: s.stats.scanBlocks.Load(), ScanReclaims: s.stats.scanReclaims.Load(),
		ScanBuffers: scanHeld, ScanReady: scanReady,
		InodeBytes: ist.Bytes, Inodes: ist.Entries, InodeEvictions: ist.Evictions,
		BudgetBytes: s.pc.c.Budget().BudgetBytes(), Bytes: s.pc.c.Budget().Bytes(),
		NodeBytes: s.e.CacheStats().Bytes, PageBytes: st.Bytes, Pages: st.Entries,
		PageHits: s.stats.pageHits.Load(), PageMisses: s.stats.pageMisses.Load(),
		ReadAheadBlocks: s.stats.readAheadBlocks.Load(), CachedReads: s.stats.cachedReads.Load(),
		ReadSubmissions: s.stats.readSubmissions.Load(), ReadAheadSubmissions: s.stats.readAheadSubmissions.Load(),
		ReadAheadWaits: s.stats.readAheadWaits.Load(), ReadAheadChunks: s.ra.inflight.Load(),
		Evictions:  st.Evictions,
		EpochsKept: s.itab.keptCount(), EpochsResumed: s.stats.epochsResumed.Load(),
	}
}
