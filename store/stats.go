package store

import "sync/atomic"

type storeStats struct {
	fsyncCommitted, fsyncCommit     atomic.Uint64
	writebackBlocks                 atomic.Uint64
	writebackErrors, extentsWritten atomic.Uint64
	csumErrors                      atomic.Uint64
}

// Stats are the store's counters since mount.
type Stats struct {
	// FsyncCommitted counts fsyncs that found their inode's last change
	// committed (the lock-free path); FsyncCommit those that committed.
	FsyncCommitted, FsyncCommit uint64
	WritebackBlocks             uint64 // blocks written back
	WritebackErrors             uint64 // failed background writebacks
	ExtentsWritten              uint64 // extents created by writeback
	CsumErrors                  uint64 // data blocks that failed their checksum
	DirtyBytes                  int64  // buffered now
	Inodes                      int    // in memory now
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	return Stats{
		FsyncCommitted: s.stats.fsyncCommitted.Load(), FsyncCommit: s.stats.fsyncCommit.Load(),
		WritebackBlocks: s.stats.writebackBlocks.Load(), WritebackErrors: s.stats.writebackErrors.Load(),
		ExtentsWritten: s.stats.extentsWritten.Load(), CsumErrors: s.stats.csumErrors.Load(),
		DirtyBytes: s.wb.dirtyBytes(), Inodes: s.itab.count(),
	}
}
