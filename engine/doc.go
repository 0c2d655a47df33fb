// Package engine is ustore's copy-on-write B-tree engine, in the style of
// btrfs: trees of checksummed nodes on a dev.Device, changed only inside
// transactions (journal), committed atomically by writing every new node and
// then a superblock that points at the new roots. docs/FORMAT.md draws the
// on-disk format; docs/ARCHITECTURE.md places the engine among the other
// packages; this comment says how the pieces fit and what must hold.
//
// Files, by concept: key.go (keys and item types), bytenr.go, generation.go,
// log_gen.go and ino.go (the typed numbers: a device address, a node's
// generation, a log generation, an inode number and its keys), format.go
// (layouts and sizes), extent_buffer.go (a node in memory), leaf.go
// (packing items in a leaf, pointers in a node), path.go and search_slot.go
// (the locked search path), cow.go, push.go, split.go, balance.go (the
// four ways a search changes the tree), items.go (insert, batch insert, delete,
// update, resize, iterate), alloc.go, extent_set.go, free_space_tree.go
// (space), commit.go, mount.go, superblock.go, superblock_choice.go,
// log_tree.go (log trees and their syncs), log_chain.go and
// log_chain_replay.go (the log chain a log sync appends to, and replay's
// walk of it), fsck.go, read_only.go (the degraded mount).
//
// # Searching and locking
//
// SearchSlot descends from the root with lock coupling: read locks above the
// write level (a parent is released once its child is locked), write locks
// from the write level down. A search that will add bytes (insLen > 0) splits
// full nodes on the way down, so a split below never reaches further up than
// its write-locked parent; one that deletes (insLen < 0) rebalances internal
// nodes at their lower bound on the way down, and the caller rebalances the
// leaf after its delete; one that changes a leaf in place (insLen == 0) locks
// only the leaf — no parent write lock, no split (the 2021 btrfs fsync patch).
// When a change needs a parent that is not write-locked — a CoW, a split, a
// merge — the search restarts with a higher write level; the first CoW of a
// path in a transaction goes straight to the root.
//
// Lock order: the tree's root pointer lock, then nodes top-down. Siblings
// are locked only under their parent's write lock, which makes any left/right
// order safe: whoever holds a sibling got there through the parent before us
// and only goes down. No lock is held across a node read from the device
// other than the locks of the nodes above it.
//
// # Transactions and commit
//
// A node whose generation is older than the running transaction is CoW'd —
// copied to a new block, its parent's pointer (or the root) updated, the old
// block freed — before its first change; a node of the running transaction
// changes in place. A transaction's nodes are immutable once all its handles
// have ended, which is when its commit starts and the next transaction may
// run beside it. The commit updates the root items and the free space tree
// (until neither changes), writes every dirty node in one batch, flushes,
// writes the superblock to both copies of the slot of its sequence number
// (the primary and its mirror, one batch), and flushes (one superWrite,
// commit.go). A log sync writes no superblock: its nodes and a record of
// the log chain the last commit's superblock names, then one flush
// (log_chain.go). Mount reads all four copies and takes the newest sound one
// (superblock_choice.go holds the decision table).
//
// # Invariants
//
//  1. Keys are strictly increasing within a node; for pointer i of an
//     internal node, key[i] <= every key under child i < key[i+1]. Parent
//     keys are lower bounds, not necessarily equal to the child's first key:
//     a delete of a child's first item does not walk up to fix them. (fsck
//     checkNode; splits set exact keys; balance sets the right sibling's key)
//  2. A pointer's generation equals its child's; a child is never newer than
//     its parent. (readChild, fsck)
//  3. Every non-root node holds at least a quarter of its capacity: leaves in
//     bytes, internal nodes in pointers. (splitLeaf's boundary choice,
//     pushLeaf's even share, balanceLeaf, balanceChild; fsck)
//  4. An item payload is at most a quarter of a leaf, so every split can
//     place it and both halves stay in bounds. (InsertItems, ResizeItem)
//  5. A node of an older generation is never changed: it is CoW'd first.
//     (search: the CoW check precedes every change at levels <= write level)
//  6. A block reachable from the newest durable superblock is never written:
//     freed blocks stay pinned until the freeing transaction is durable.
//     (allocator.free / unpin)
//  7. Referenced space and the free space tree partition the device, with no
//     block referenced twice. The allocator's free set holds only device
//     space (loadFreeSpace and unpin refuse the rest as corruption); an
//     extent it hands out is inside the device and no longer free
//     (assertTaken, asserted again where applyDelta takes it), and every
//     add or take moves the free total by exactly its length
//     (extentSet.assertSum; read back in Space). The invariants build walks
//     the whole free set at each commit and unpin. (fsck; applyDelta;
//     extentSet.check)
//  8. Every node read from the device is checked — checksum, fsid, bytenr,
//     owner, level, generation, shape — before use; a mismatch is
//     ErrCorruption, never a panic. (readNode, verify, checkShape; fuzzed)
//  9. A superblock is acknowledged only once both copies of its slot are
//     durable, and mount never takes a superblock older than a checksummed
//     copy of a newer one: a newer copy with impossible fields is refused,
//     and a fallback that may pass an acknowledged superblock is a WARN and
//     an fsck problem. (superWrites, chooseSuperblock; superblock_test.go)
//  10. A read-only mount never writes: it loads no free space, Start and
//     StartReserved refuse with ErrMountedReadOnly, so no transaction runs
//     and the journal, which commits only a transaction that ran, never
//     writes a node or a superblock. (checkWritable; TestEngine_Mount_ReadOnly)
package engine
