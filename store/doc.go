// Package store is the filesystem ustore serves: a namespace of directories
// and files on the engine's fs tree, file data in checksummed extents,
// buffered writes with writeback, and the durability calls (fsync, sync).
// docs/FORMAT.md draws its items; docs/design/store.md says why it is built
// this way; docs/ARCHITECTURE.md places it among the other packages. The API is by inode number (as the protocol's requests), with
// path helpers (Resolve, Put, Get) on top; errors are *fs.PathError
// wrapping a syscall.Errno.
//
// Files, by concept: namespace.go, rename.go and exchange.go (names;
// renameat2's flags), create_batch.go (a directory's concurrent creates,
// made in batches), symlink.go (symbolic links: the target, its limit),
// dir.go (the three items of a name), name_room.go (room for a name in its
// list items), attr.go (stat, setattr, statfs, readdir), xattr.go
// (extended attributes), times.go (the timestamp range), io.go (write,
// read), read_cached.go (a read from memory that never waits), read_ahead.go
// (a sequential reader's next chunks, in the background), scan_ring.go (a
// large sequential scan's chunks, held in a ring, not cached), read_blocks.go
// (file blocks from the device, checked), pages.go
// (buffered pages), writeback.go, writeback_pipeline.go and flusher.go
// (dirty data to extents; the budget), writeback_staging.go (writeback's
// staging buffers, a bounded set), extents.go and csum.go (extent and
// checksum items), truncate.go, fallocate.go (allocate and punch: extents
// of zero blocks written as writeback's, or dropped as truncate's),
// log_*.go (fsync: see "The fsync path" below), itable.go (inodes in
// memory), inode_charge.go (what each is charged against the cache
// budget), kept_epochs.go (their cache epochs across eviction), check.go
// and check_items.go (fsck), scrub.go (fsck --data: every data block
// against its checksum), ino_paths.go (an inode's paths, for reports),
// read_only.go (the degraded, read-only mount), orphan.go (open files:
// holds, orphans and their cleanup at mount), store.go (mount and
// unmount), path.go.
//
// # Invariants
//
//  1. Every name is three items that agree: DIR_ITEM (dir, hash) and
//     DIR_INDEX (dir, index) in the directory, INODE_REF (child, dir) in the
//     child; a directory has exactly one name, its nlink is 2 + its
//     subdirectories, its size its number of entries; a file's nlink is its
//     number of names. (Check)
//  2. A namespace operation is one transaction handle, taken after every
//     check that can fail, the room for its name in the list items it
//     extends among them (EMLINK, EOVERFLOW; name_room.go): a commit holds
//     all of it or none. A failure after its first tree change aborts the
//     transaction (engine.Abort), so half an operation is never committed.
//     (abortOnError)
//  3. Ordered data: an extent item enters a transaction only after its data
//     write has completed; the commit's flush precedes its superblock,
//     and a log sync's one flush follows it (the sync's chain record may
//     reach the disk without the data: replay checks logged data against
//     its logged checksums, logtree.Replay). The
//     tree's size of a file covers only data written for it: writeback
//     advances it batch by batch, over a prefix whose dirty pages are all
//     written. (writeExtents)
//  4. A data block belongs to one extent and has one checksum; a block
//     whose checksum does not match is never returned: the read fails with
//     EIO and the mismatch is logged with inode, offset and block; Scrub
//     reads every block and reports each mismatch with its inode, offset
//     and paths. (readBlocks, Check, Scrub)
//  5. Every byte of a buffered page past the file's size is zero, and
//     before a file grows past an unaligned end the old last block's tail is
//     zeroed in a dirty page: bytes a truncate cut off never come back.
//     (truncateLocked, zeroTailLocked, fillPage)
//  6. Buffered pages are bounded: each holds one unit of the dirty budget
//     and one of device space, taken before it exists; a writer past the
//     budget waits for writeback, and a write the device could not hold
//     fails with ENOSPC when it is made, not at writeback. (wbState)
//  7. Lock order: renameMu → a victim's wbMu → inodes' mu by ascending ino
//     → transaction handle → extMu → tree locks; see inode's comment for
//     why a handle holder never waits on an inode lock. (inode)
//  8. fsync's "already durable?" is one atomic load of the inode's last
//     transaction and one of the commit sequence, or (inLog) of the
//     inode's logged marks and the log's lastLogCommit: no lock. A
//     generation still being logged is above lastLogCommit, so the lock-free
//     answer is never yes before the log sync is durable. (fsync, inLog,
//     logAndSync)
//  9. An inode's logged marks (loggedChanges, loggedGen) are set under its
//     mu, after every item of it is in the log of its own transaction, with
//     the change count read before logging: a change made since makes
//     inLog false. Both marks only grow, and the logged count is never
//     above the inode's. (logAndSync, inLog)
//  10. logTrack holds the running transaction's changes only, as sorted,
//     disjoint, non-adjacent ranges; a change of an older transaction is
//     ignored, and an fsync of one finds errTrackGone and commits. What it
//     cannot express (a rename, a logged name changed) makes every later
//     fsync of the transaction commit. (rangeSet.add, logTrack.take,
//     staleReason)
//  11. A file's log is append-only: an fsync's records take sequence
//     numbers after the inode's last one, a range record followed by
//     copies of the extents in it, so replay applies them in order, later
//     over earlier. (appendFileLog)
//  12. A read-only store changes nothing: every change fails with EROFS
//     before it touches an inode or a tree, and mount reads only what
//     reads need (no free space, no highest inode number, no directory's
//     next index); an fsync log to replay refuses the mount. (writable,
//     checkNoPendingLog; TestStore_OpenReadOnly_DamagedTree)
//  13. The page cache is never stale: a read returns, for every block, at
//     least the last version whose write returned before the read began — a
//     cached block is replaced or made unreachable by every write of it (its
//     dirty page shadows it, writeback replaces it), by a truncate that
//     shrinks the file and by the file's deletion (a new epoch), and a read
//     caches what it fetched only if no block of the inode was dirtied
//     meanwhile (cacheSeq); ReadCached, which reads only what is in memory,
//     follows Read's rules under the inode's mu, and reads an inode only
//     while it is the table's. A scan's chunk in the ring (invariant 22)
//     is read only while its inode's epoch and cacheSeq are those it was
//     issued under. Cached blocks, tree nodes and in-memory
//     inodes share one byte budget, each charged exactly (invariant 21). (page_cache.go, ReadCached; TestPageCache_*,
//     TestStore_ReadCached_*, TestModel)
//  14. Teardown is bulk: unmount drops the inode table's maps and the
//     inode cache's and page cache's shards whole (evict.Cache.DropAll,
//     Clear), one step per shard, visiting no inode and no block, and dropping an inode's cached blocks is one epoch change,
//     whatever the file's size. (Store.teardown, invalidateLocked;
//     TestStore_Close_TeardownLinear)
//  15. A file whose last name goes while it has holds (Open) keeps its
//     inode and data at nlink 0, and its ORPHAN_ITEM enters the tree in
//     the same transaction as the name's removal; the last Release frees
//     the inode and the item in one transaction, and mount frees every
//     orphan after log replay, so no crash leaks an orphan's space. A
//     held inode is never evicted (each hold is a table reference).
//     (orphanInode, freeOrphanLocked, freeOrphans;
//     TestCrash_UnlinkWhileOpen, TestStore_Open_NotEvicted)
//  16. A symbolic link (mode ModeLink) has exactly one extent, inline at
//     offset 0, holding its target: size bytes, 1 to SymlinkTargetMax,
//     written with the inode and never changed; the fsync log copies it
//     wherever it logs a link not yet committed, so a replayed link is
//     never without its target. The store never follows a link: a path
//     through one fails with ELOOP. (checkLink, logTarget, throughDir;
//     TestSymlink_*, TestCrash_SymlinkFsyncParent)
//  17. Nothing changes a file's data or size while its inode is out of
//     memory: every change (write, truncate, the deletion by unlink or
//     rename over it) loads the inode and holds a reference across the
//     change, and the inode table evicts only inodes with no reference,
//     no buffered page and no holder of their mu (invariant 21). So an inode loaded again
//     may continue the page-cache epoch it had when evicted: what is
//     cached under it is what the device holds for the file. A deleted
//     inode's epoch is never kept, and a new inode's number never had
//     one. (inodeTable.tryEvict, inodeTable.dropLocked, inodeTable.add;
//     TestPageCache_Read_AfterInodeEviction,
//     TestPageCache_Concurrent_NeverStaleAcrossEviction)
//  18. An inode's extended attributes are user.* entries of XATTR_ITEMs
//     keyed by crc32c(name), each name once and no item empty (a
//     change rewrites the item whole, checked before its handle; the last
//     entry's removal deletes it), deleted with the inode. A change is
//     tracked for fsync, which then logs the inode's whole set
//     (LogXattrs), and replay makes the set exactly the logged one.
//     (changeXattr, logXattrs, replayer.ReplayXattrs; Check;
//     TestCrash_Xattrs)
//  19. CreateNoWait, MkdirNoWait, UnlinkNoWait, RmdirNoWait and
//     RenameNoWait never wait for what the waiting calls may wait for (an
//     inode load, a lock a holder keeps across I/O — renameMu included,
//     which an fsync holds read while it logs —, a commit to unpin space,
//     the freeze of a committing transaction): each such step is a peek or
//     a TryLock, every refusal (ErrWouldWait) comes before the transaction
//     handle starts and changes nothing, and the handle's start is the
//     last refusable step (engine.TryStartReserved). From there they are
//     the waiting calls: the same code (makeInodeLocked, removeHeld,
//     renameInTrans), the same transaction, the same answers. The inodes
//     they change are held in memory by their mu, not a reference
//     (invariant 17 holds: the table does not evict an inode whose mu is
//     held). CreateNoWait, MkdirNoWait and RenameNoWait also decline while
//     a directory they change has a create queue (invariant 23): its
//     leader waits for the directory's mu or holds it across a pass, and
//     its waiters are not overtaken. Since RenameNoWait holds every lock
//     it needs from its look-ups to the change, it makes no second look-up
//     under the locks, as renameOnce must.
//     (nowait.go; TestStore_NoWait_DeclinesWithoutSideEffects,
//     TestStore_RenameNoWait, TestStore_MkdirRmdirNoWait,
//     TestCreateBatch_NoWait_DeclinesWhileQueued, TestCrash_Workloads:
//     creates, mkdirs, unlinks, rmdirs and renames of even steps)
//  20. Read-ahead is bounded and reads a block once: an inode has at most
//     readAheadChunksMax chunks in flight and the store
//     readAheadInflightMax, each holding a slot from its issue to its
//     end; a chunk is on its inode's raFlight until its blocks are
//     cached, held in the scan ring (invariant 22) or refused, and a read that misses one of its blocks waits
//     for it (once) before it reads the device. A background read fills
//     only the inode the table holds, with a reference, under invariant
//     13's rules; Close waits for every one before the engine closes.
//     (readAheadLocked, readAheadDoneLocked, readAheadRun,
//     readAheadClose; TestReadAhead_*,
//     TestPageCache_Concurrent_NeverStaleSequential)
//  21. In-memory inodes are bounded in bytes, with nodes and pages, not
//     by count. An inode is in the table iff it is an entry of the inode
//     cache (the evict.Cache on the cache budget), except between get's or
//     add's insertion and its Add, while the inserter holds the only
//     reference; it is charged exactly what chargeLocked computes from
//     its state — its struct, its page maps at the most entries each held
//     since made, its index slots (inode_charge.go) — and re-charged under
//     mu whenever that changes (rechargeLocked); the maps are made afresh
//     when it has no buffered page left. It leaves memory only by the
//     cache's hand (or unmount): tryEvict, under the cache shard's lock,
//     takes the table shard's lock and the inode's mu by TryLock only,
//     evicts only an inode with no reference (an operation, an open hold,
//     the dirty set's), no buffered page and no holder of mu, and drops it
//     from the table in the same step. fsync's state lives by inode number
//     (logTrack) or is re-read from the tree (lastTrans; a reloaded
//     inode's logged marks are zero, so it is logged again): eviction
//     inside a running transaction loses nothing an fsync needs.
//     (checkInodeCharges, TestItable_Charge_*, TestItable_PageMapBytes_Heap,
//     TestMem_InodesAndData, TestCrash_InodesEvicted)
//  22. A scan — a sequential run over a file of at least ScanReadBytes
//     (default a quarter of the cache budget) — caches nothing: its chunks
//     of read-ahead are read into the scan ring's buffers and its misses
//     on demand. The ring is bounded by a constant, not the cache budget:
//     at most scanRingChunks buffers of one chunk (16 MiB), made on first
//     use and kept, in the memory bound's fixed allowance; an inode holds
//     at most scanInodeChunks scan chunks, in flight and ready. A chunk
//     holds its buffer from its issue until it is released — on its
//     inode's scanReady and the ring's ready list between its fill and its
//     release, each buffer held by one chunk at a time — and a reader
//     reads a block from it only under the inode's mu, only if the chunk
//     read and verified that block, and only while the inode's epoch and
//     cacheSeq are those the chunk was issued under (invariant 13): every
//     write, shrinking truncate, punch and deletion makes it unreadable
//     before it returns, and drops it. Another scan takes a ready chunk
//     only under its inode's mu, by TryLock. (scanRing, scanUsableLocked,
//     scanBuffer, scanFilledLocked; TestScanRing_*)
//  23. A directory's concurrent creates (create, mkdir, symlink) are
//     made by its create queue's one leader, which alone holds the
//     directory's mu for them: a pass of at most createBatchMax queued
//     requests under one hold of it and one transaction handle, each
//     request looked up after those before it (a name made earlier in
//     the pass is EEXIST), with its own checks before its first change
//     and its own answer (EEXIST, EOVERFLOW, ENOSPC, ENOENT for a deleted
//     directory): a refused request changes nothing but, at most, leaves
//     a gap in the inode numbers the pass took at once; the rest are made
//     as a lone create makes them (the same items, attributes, logTrack
//     records; the directory's item written once with the last create's
//     times). A request's answer is given only after its pass's handle
//     ended and its inode is in the table — the durability a lone create
//     gives — and a failure after a change aborts the transaction and is
//     the answer of every create in it. A queue's waiters hold a
//     reference on the directory and no lock; a leader leads at most
//     createLeadPassesMax passes, then the oldest waiter leads.
//     (createBatchLocked, createInPass, leadCreates; TestCreateBatch_*,
//     TestCrash_Workloads and TestCrash_InodesEvicted: crashBatchWorkloads)
//  24. Writeback's staging memory is bounded by the dirty budget: a
//     batch is copied only into a buffer of the store's wbStagingSet, which
//     holds wbStagingCapacity(DirtyBytes) buffers of wbChunkBytes (1 to
//     wbStagingMax), each made at most once and kept across collections
//     (a batch of at most wbSmallStagingBytes takes a small buffer of its
//     own instead, one per writeback in flight, so that small fsyncs never
//     queue behind each other's writebacks);
//     a buffer is held by one batch at a time, from its prepare until its
//     device write ends, and a preparer with every buffer held waits. It
//     waits holding no lock but its inode's wbMu, and the holder of a
//     buffer gives it back without waiting for any buffer or any wbMu, so
//     every writeback proceeds with one buffer. (wbStagingSet,
//     prepareBatch; TestWritebackStaging_*, TestMem_Writer)
//
// # The fsync path
//
// Read in this order (docs/design/logtree.md follows one fsync through the
// first two and logtree/log.go):
//
//	log_fsync.go    Fsync: the fast paths (invariant 8), writeback of the
//	                inode's dirty pages (invariant 3), then log or commit,
//	                counted by outcome and fallback reason
//	log_inode.go    logAndSync: a transaction handle, logtree.Join, what is
//	                logged for the inode (logInode: its item; its names and
//	                every parent new in the transaction, over a work list;
//	                a file's changed ranges; a directory's changed entries
//	                and the names of inodes it lost), Done, then the group
//	                commit's Sync; inLog
//	log_track.go    logTrack: what the running transaction changed since
//	                each inode was last logged, and the fallback reasons
//	log_replay.go   replayer, the logtree.Target that applies a log at
//	                mount, then fixes up link counts and sizes
//	log_outcome.go  the outcomes an fsync counts and the fallback
//	                reasons that make it commit, named
//
// logtree/doc.go has the rest of the map (group commit, the log tree's
// writer and format, replay's stages, engine/log_tree.go) and the trouble
// cases, each with its datadriven test.
package store
