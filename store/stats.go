package store

import (
	"sync"
	"sync/atomic"

	"ustore/engine"
	"ustore/evict"
	"ustore/logtree"
)

type storeStats struct {
	fsyncCommitted, fsyncCommit     atomic.Uint64
	fsyncInLog, fsyncLogged         atomic.Uint64
	fallbackMu                      sync.Mutex
	fallbacks                       map[string]uint64
	writebackBlocks                 atomic.Uint64
	writebackErrors, extentsWritten atomic.Uint64
	csumErrors                      atomic.Uint64
	renameWritebacks                atomic.Uint64
	spaceWaits                      atomic.Uint64
	nameItemFull                    atomic.Uint64
	// The page cache's (page_cache.go); teardownSteps counts the blocks
	// and inodes unmount and invalidation visit one at a time.
	pageHits, pageMisses, readAheadBlocks atomic.Uint64
	epochsResumed, cachedReads            atomic.Uint64
	// readSubmissions counts the device submissions of file reads;
	// readAheadSubmissions those read-ahead made in the background, and
	// readAheadWaits the reads that waited for read-ahead in flight.
	readSubmissions, readAheadSubmissions atomic.Uint64
	readAheadWaits                        atomic.Uint64
	// scanBlocks counts the blocks reads took from the scan ring's
	// chunks, scanReclaims the chunks a scan took from another's
	// (scan_ring.go).
	scanBlocks, scanReclaims atomic.Uint64
	teardownSteps            atomic.Uint64
	fsyncDataRoundTrips      atomic.Uint64
	// The create queue's (create_batch.go).
	createBatches, createsBatched atomic.Uint64
}

// Stats are the store's counters since mount, and a few values now.
// `ustore serve --metrics-addr` serves every field (cmd/ustore): a
// counter unless its tag says `metric:"gauge"`, a map as one family
// labelled by its key.
type Stats struct {
	// FsyncCommitted counts fsyncs that found their inode's last change
	// committed; FsyncInLog those that found it in a durable log (both
	// lock-free); FsyncLogged those that logged it and synced the log;
	// FsyncCommit those that committed the transaction instead, with
	// FsyncFallbacks saying why.
	FsyncCommitted, FsyncCommit uint64
	FsyncInLog, FsyncLogged     uint64
	FsyncFallbacks              map[string]uint64 `metric:"label=reason"`
	WritebackBlocks             uint64            // blocks written back
	WritebackErrors             uint64            // failed background writebacks
	ExtentsWritten              uint64            // extents created by writeback
	CsumErrors                  uint64            // data blocks that failed their checksum
	// RenameWritebacks counts renames over an existing name that wrote
	// back the source's buffered data first (rename.go).
	RenameWritebacks uint64
	// SpaceWaits counts writes that, short of device space, waited for
	// the writebacks in progress to end before deciding (wbState.reserve).
	SpaceWaits uint64
	// NameItemFull counts names refused because a list item (a hash
	// chain's DIR_ITEM, an inode's INODE_REF in one directory) would
	// not fit in a leaf: EOVERFLOW or EMLINK (name_room.go).
	NameItemFull uint64
	// CreateBatches counts the passes of a directory's create queue
	// that made more than one create (create, mkdir, symlink) under one
	// hold of its lock; CreatesBatched the creates those passes made
	// (create_batch.go).
	CreateBatches, CreatesBatched uint64
	DirtyBytes                    int64 `metric:"gauge"` // buffered now
	Inodes                        int   `metric:"gauge"` // in memory now
	// FreeExtents is the number of free extents the device's free space
	// is in now: its fragmentation (engine.SpaceInfo).
	FreeExtents int `metric:"gauge"`
	// Log is the fsync log's: log syncs and the contexts they completed
	// (the group-commit batch), leaf-only relogs. LogTree counts the log
	// trees' parent write locks and leaf splits.
	Log     logtree.Stats
	LogTree engine.TreeStats
	// NodeCache is the engine's cache of tree nodes: hits and misses
	// (a dashboard's hit ratio), loads, evictions, its size now.
	NodeCache evict.Stats
	// DeviceRoundTrips counts the device round trips an fsync waits on,
	// one after the other.
	DeviceRoundTrips RoundTrips
	// LogDeltaBytes counts the bytes of changes the log's delta records
	// carried (logtree/delta.go): over Log.Syncs − Log.Checkpoints, what a
	// small log sync wrote instead of the tree's nodes.
	LogDeltaBytes uint64
	// Cache is the shared cache budget's and the page cache's: bytes
	// held by nodes and by file data, page hits and misses, read-ahead.
	Cache CacheStats
}

// RoundTrips are device round trips on fsync's path — a batch of writes
// waited on, or a flush — counted where they are made. An fsync that logs
// waits for its data writes (FsyncData, its own) and for the log sync it
// joins (LogSync, shared by every fsync of the group): an fsync's figure
// is FsyncData/FsyncLogged + LogSync/Log.Syncs.
type RoundTrips struct {
	// FsyncData: writes of dirty data made by fsyncs before they log or
	// commit (ordered data: each batch is written before the log maps it).
	FsyncData uint64
	// LogSync: the writes and flushes of log syncs (engine.SyncLog).
	LogSync uint64
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	return Stats{
		FsyncCommitted: s.stats.fsyncCommitted.Load(), FsyncCommit: s.stats.fsyncCommit.Load(),
		FsyncInLog: s.stats.fsyncInLog.Load(), FsyncLogged: s.stats.fsyncLogged.Load(),
		FsyncFallbacks:  s.stats.fallbackCounts(),
		WritebackBlocks: s.stats.writebackBlocks.Load(), WritebackErrors: s.stats.writebackErrors.Load(),
		ExtentsWritten: s.stats.extentsWritten.Load(), CsumErrors: s.stats.csumErrors.Load(),
		RenameWritebacks: s.stats.renameWritebacks.Load(), SpaceWaits: s.stats.spaceWaits.Load(),
		NameItemFull:  s.stats.nameItemFull.Load(),
		CreateBatches: s.stats.createBatches.Load(), CreatesBatched: s.stats.createsBatched.Load(),
		DirtyBytes: s.wb.dirtyBytes(), Inodes: s.itab.count(), FreeExtents: s.e.Space().FreeExtents,
		Log: s.tlog.Stats(), LogTree: s.e.LogTreeStats(), NodeCache: s.e.CacheStats(),
		DeviceRoundTrips: RoundTrips{FsyncData: s.stats.fsyncDataRoundTrips.Load(), LogSync: s.e.Stats().LogSyncRoundTrips},
		LogDeltaBytes:    s.e.Stats().LogDeltaBytes,
		Cache:            s.CacheStats(),
	}
}

// fallback counts an fsync that committed instead of logging, by reason.
func (st *storeStats) fallback(reason string) {
	st.fallbackMu.Lock()
	if st.fallbacks == nil {
		st.fallbacks = map[string]uint64{}
	}
	st.fallbacks[reason]++
	st.fallbackMu.Unlock()
}

func (st *storeStats) fallbackCounts() map[string]uint64 {
	st.fallbackMu.Lock()
	defer st.fallbackMu.Unlock()
	m := make(map[string]uint64, len(st.fallbacks))
	for k, v := range st.fallbacks {
		m[k] = v
	}
	return m
}
