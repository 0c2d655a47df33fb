// Package logtree is fast fsync: log transactions shared by concurrent
// fsyncs, the items an fsync copies into the running transaction's log tree,
// and replay of a log at mount (btrfs: fs/btrfs/tree-log.c).
// docs/ARCHITECTURE.md ("The fsync path") gives the overview.
//
// # Trouble cases
//
// What the log must survive, each as a workload (then a power cut and the
// log's replay) followed by the rule it forces, as tree-log.c opens with
// its "directory trouble cases". Each is a case of the datadriven test,
// named by its file under testdata/ and its "Source:" line.
//
//	mkdir foo/some_dir; commit; mv foo/some_dir foo2/some_dir;
//	mkdir foo/some_dir; fsync foo/some_dir/some_file
//
// A rename changes two directories and maybe a third inode (the one whose
// name it took): any rename makes every later fsync of its transaction
// commit (fallback "rename"), and a log synced before the rename replays to
// the state before it. (tree_log: "directory trouble case 1"; rename: "the
// rule every rename case rests on", and every case of that file.)
//
//	touch foo; fsync foo; ln foo bar; fsync bar
//
// The log holds an inode's names as they were when it was logged: a link or
// unlink of an inode whose names are in the log, or an unlink from a
// directory whose entries are, makes later fsyncs commit
// (logged_name_changed). (tree_log: "directory trouble case 2"; hard_links:
// "btrfs_del_inode_ref_in_log".)
//
//	touch foo; ln foo bar; sync; unlink bar; fsync foo
//
// An inode's names are logged all at once (LogNames) and replay makes its
// names exactly those: a name removed since the commit goes, with its
// directory entry. (tree_log: "unlink example 1", "unlink example 2".)
//
//	mkdir a b; touch a/f; ln a/f b/g; sync; unlink a/f; fsync a
//
// Logging a directory logs the names of every inode that lost an entry in
// it in this transaction: the one that lives on as b/g is not taken for an
// orphan (btrfs: last_unlink_trans). (tree_log: "btrfs_log_all_parents /
// last_unlink_trans"; hard_links: "generic/107".)
//
//	mkdir f1/foo (with a subtree); commit; rm -rf f1/foo; fsync f1
//
// Replay ends with a fixup of every inode it touched: link counts,
// directory sizes and byte counts recomputed from the tree, and an inode
// left without a name deleted with its entries — "redo the rm -rf".
// (tree_log: "directory trouble case 3", "log_dir_items".)
//
//	mkdir -p a/b/c; echo x > a/b/c/f; fsync a/b/c/f
//
// A name needs somewhere to live: logging an inode's names logs each
// parent created in the running transaction, up to a committed directory,
// over a work list as deep as the chain (TestLog_DeepNewDirs in the store:
// 10,000 new directories). (tree_log: "log_new_ancestors", and the hard
// link form, "log_all_new_ancestors".)
//
//	touch foo; pwrite foo 0 4K; fsync foo; pwrite foo 4K 4K;
//	ln foo bar; fsync other
//
// An inode logged only so that a logged entry can point at it (LogExists)
// is logged empty and does not count as in the log: its own fsync logs it
// whole, and replay never makes a size that no write made. (tree_log: "the
// LOG_INODE_EXISTS isize comment", "the second reason not to update
// last_log_commit"; dir_fsync: "the third reason".)
//
//	sync; ln -s target d/l; fsync d
//
// A symbolic link is never without its target (symlink(2) refuses an
// empty one): wherever a link created in the running transaction is
// logged — whole, or only so that a logged entry can point at it — its
// target, one inline extent, is logged with it (btrfs logs a symlink with
// LOG_INODE_ALL). (symlinks: "the symlink case of btrfs_log_inode", and
// every case of that file; store: TestCrash_SymlinkFsyncParent.)
//
//	touch d/f1 d/f2 d/f3; sync; rm d/f2; touch d/f4; fsync d
//
// A directory's logged entries come with the index ranges they replace
// (DIR_LOG_INDEX): replay deletes the committed entries in those ranges
// before adding the logged ones, so no entry is counted twice (the
// directory's size stays right, and it is removable once emptied) and a
// removed one does not come back. (dir_fsync: "generic/034", "the dir-fsync
// benchmark"; bulk, for thousands of entries in several batches.)
//
//	pwrite f 0 1M; sync; pwrite f 512K 4K; fsync f
//
// The log copies the extents of the ranges changed since the inode was last
// logged, with their checksums, not the file: an fsync's cost follows the
// change (the 2011 btrfs csum patch; TestLog_FsyncFollowsChange in the
// store). (file_data: "the 2011 btrfs csum patch", "generic/588".)
//
//	pwrite f 0 8K; sync; truncate f 0; pwrite f 4K 4K; fsync f
//
// A file's log record names a range and replaces every extent in it, so a
// hole is logged by the record, not by an item of its own. (file_data:
// "btrfs_log_holes".)
//
//	pwrite f 0 8K; fsync f; truncate f 0; pwrite g 0 8K; fsync g
//
// Blocks a synced log references are not reused before the transaction's
// commit (blocks freed in the running transaction return only when it
// commits), or the log's replay would hand them back to f with g's data.
// (file_data: "copy_items".)
//
//	setfattr -n user.a foo; sync; setfattr -x user.a foo;
//	setfattr -n user.b foo; fsync foo
//
// An inode whose extended attributes changed since it was last logged logs
// all of them (LogXattrs), and replay makes its attributes exactly those:
// the removed one does not come back from the commit, and no merge of
// logged and committed attributes can overfill an item. (xattrs: every
// case.)
//
//	touch foo; fsync foo; crash; touch bar
//
// Replay's commit leaves the store's next inode number above every inode
// it brought back. (file_data: "generic/481".)
//
// # Invariants
//
//  1. Contexts of one sub-transaction all log before any of them syncs it:
//     the committer waits until the sub-transaction has no writer, then
//     moves the log to the next sub-transaction, so a checkpoint's nodes
//     never change once its sync has begun (the CoW rule of the engine's
//     log trees does the rest; a delta writes no node). A context joins only a
//     sub-transaction whose sync has not begun. (Log.Join, Ctx.Done,
//     Log.sync)
//  2. Syncs run one at a time, in sub-transaction order: a sync writes the
//     nodes of every earlier unsynced sub-transaction with its own, and
//     its chain record may name nodes an earlier sync wrote. (Log.sync)
//  3. lastLogCommit only grows; it is written only by a committer, after
//     its log sync (nodes, chain record, flush) is durable, and read without the mutex (the 2021
//     btrfs fsync patch; TestLog_LastLogCommit_TakesNoLock). A context
//     whose sync another committer ran finds that sync's generation
//     published once it succeeded. (Log.sync)
//  4. Any failure while logging poisons the transaction's log
//     (forceCommit): a half-logged inode could otherwise be made durable by
//     another context's sync. A poisoned log is never synced, and every
//     later fsync of that transaction commits. (Log.sync)
//  5. Replay reads and verifies the whole log before it changes anything —
//     the log of the chain's newest record, or of the one before it when
//     the newest sync did not complete (its nodes, digest, deltas or logged
//     data do not verify); a damaged log is reported and not applied at
//     all. (Replay; engine/log_chain.go)
//  6. A delta records every change to the log tree in the order the tree
//     saw it (Log.deltaMu across both), so its checkpoint's tree with the
//     deltas after it applied in chain order is the tree the sync saw; and
//     whether a sync is a delta or a checkpoint is decided before the next
//     sub-transaction's first context joins: after a delta it changes the
//     same dirty nodes in place (nobody writes them), after a checkpoint it
//     logs with a new node generation, CoWing the nodes being written.
//     (Writer, Log.sync, delta.go)
//
// # The fsync path
//
// An fsync that cannot be answered from atomics (already committed, already
// in a synced log) joins the current log sub-transaction (Join), copies its
// inode's changed items into the log tree (a Writer), leaves (Done), and
// syncs (Sync). The first context to sync a sub-transaction commits it for
// every context that joined it — group commit — and each gets its result
// (TestLog_GroupCommit_Batch in the store).
//
// The whole path, by file (docs/design/logtree.md walks one fsync through
// the first three):
//
//	store/log_fsync.go    Store.Fsync: the fast paths, writeback, log or
//	                      commit, counted by outcome and fallback reason
//	store/log_inode.go    logAndSync (Join, log, Done, Sync) and what is
//	                      logged for an inode: item, names and new parents,
//	                      a file's changed ranges, a directory's entries
//	logtree/log.go        log sub-transactions, contexts, group commit,
//	                      lastLogCommit; Sync calls engine.SyncLog
//	engine/log_tree.go    log generations, the log tree's blocks, SyncLog:
//	                      a checkpoint (the nodes and a chain record) or a
//	                      delta (a chain record carrying the changes), one
//	                      flush
//	engine/log_chain.go   the log chain: records, their checks, the digest;
//	                      log_chain_replay.go: head, walk, candidates
//	logtree/writer.go     Set, Insert, DeleteRange into the log tree (the
//	                      leaf-only relog of Set: TestLog_RelogLeafOnly),
//	                      each recorded in its sub-transaction's delta
//	logtree/delta.go      deltas: a small sync writes its changes in its
//	                      chain record instead of the tree's nodes; replay
//	                      rebuilds the log from a checkpoint and deltas
//	store/log_track.go    what the running transaction changed, and why a
//	                      log can no longer express an fsync (fallbacks)
//	logtree/format.go     the log-only items
//	logtree/replay.go     Replay at mount: choose the log (chain, tree,
//	                      digest, data), claim, stages
//	store/log_replay.go   the store's Target: the stages applied to the tree
//
// The log's items are copies of fs and csum tree items (same keys and
// encodings) plus three log-only kinds: LOG_INODE (how an inode was
// logged), LOG_FILE (an inode's file log: range and extent records in
// logging order, applied in order) and DIR_LOG_INDEX (a directory index
// range the logged entries replace). What the items mean for the namespace
// is the store's: replay calls a Target the store implements, stage by
// stage, in btrfs's order.
//
// Files: log.go (log transactions, contexts, group commit), writer.go
// (writing items into the log tree), delta.go (delta records), format.go
// (log-only items), replay.go (replay at mount), stats.go (counters).
package logtree
