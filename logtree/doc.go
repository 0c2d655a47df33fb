// Package logtree is fast fsync: log transactions shared by concurrent
// fsyncs, the items an fsync copies into the running transaction's log tree,
// and replay of a log at mount (btrfs: fs/btrfs/tree-log.c).
//
// An fsync that cannot be answered from atomics (already committed, already
// in a synced log) joins the current log sub-transaction (Join), copies its
// inode's changed items into the log tree (a Writer), leaves (Done), and
// syncs (Sync). The first context to sync a sub-transaction commits it for
// every context that joined it — group commit — and each gets its result.
//
// Invariants:
//
//   - Contexts of one sub-transaction all log before any of them syncs it:
//     the committer waits until the sub-transaction has no writer, then
//     moves the log to the next sub-transaction, so a log generation's
//     nodes never change once its sync has begun (the CoW rule of the
//     engine's log trees does the rest).
//   - Syncs run one at a time, in sub-transaction order: a sync writes the
//     nodes of every earlier unsynced sub-transaction with its own, and
//     its superblock may name nodes an earlier sync wrote.
//   - lastLogCommit is written only by a committer, after its superblock is
//     durable, and read without the mutex (the 2021 btrfs fsync patch).
//   - Any failure while logging poisons the transaction's log (forceCommit):
//     a half-logged inode could otherwise be made durable by another
//     context's sync. Every later fsync of that transaction commits.
//   - Replay reads and verifies the whole log before it changes anything;
//     a damaged log is reported and not applied at all.
//
// The log's items are copies of fs and csum tree items (same keys and
// encodings) plus three log-only kinds: LOG_INODE (how an inode was
// logged), LOG_FILE (an inode's file log: range and extent records in
// logging order, applied in order) and DIR_LOG_INDEX (a directory index
// range the logged entries replace). What
// the items mean for the namespace is the store's: replay calls a Target
// the store implements, stage by stage, in btrfs's order.
//
// Files: log.go (log transactions, contexts, group commit), writer.go
// (writing items into the log tree), format.go (log-only items),
// replay.go (replay at mount), stats.go (counters).
package logtree
