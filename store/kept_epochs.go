package store

// keptEpochs remembers the page-cache epochs of inodes the inode table
// evicted, so that an inode loaded again continues its epoch and finds the
// blocks it had cached (page_cache.go). Without it every reload began a
// fresh epoch, and every block still cached for the file was unreachable:
// budget held by blocks no lookup could find, and a miss for each.
//
// Continuing an epoch is safe because nothing changes a file's data or
// size while its inode is out of memory: every change — a write, a
// truncate, the file's deletion by unlink or rename over it — loads the
// inode and holds a reference for the change, and the table evicts only
// unreferenced inodes with no buffered data (store/doc.go, invariant 17).
// So the blocks cached under the epoch are what the device holds for the
// file when it comes back. Forgetting an epoch is always safe: the inode
// then gets a fresh one and its old blocks are only wasted.
//
// It is bounded by count, the oldest dropped first: a ring of the
// numbers kept, in eviction order, and a map from number to epoch and the
// ring slot that kept it. One keptEpochs belongs to each inode table shard
// and is guarded by the shard's mutex.
type keptEpochs struct {
	m    map[Ino]keptEpoch
	ring []Ino // grows to max slots, then slot next is the oldest
	next int   // the slot the next kept epoch takes, once the ring is full
	max  int
}

// keptEpoch is an inode's epoch and the ring slot that records it: a slot
// overwritten later drops its inode's entry only if the entry is still the
// one the slot recorded.
type keptEpoch struct {
	epoch uint64
	slot  int
}

// keptEpochsMax bounds the epochs kept in all: 262,144 evicted files
// (about 10 MiB of map and ring), and never more than the cache could
// hold blocks — an epoch is worth keeping only while a block of it is
// cached, and each cached block needs its own.
const keptEpochsMax = 1 << 18

// keptEpochsPerShard is the bound of one shard's keptEpochs for a cache of
// cacheBytes.
func keptEpochsPerShard(cacheBytes int64) int {
	n := min(cacheBytes/cleanPageBytes, keptEpochsMax)
	return int(n)/inodeShards + 1
}

func newKeptEpochs(max int) keptEpochs {
	return keptEpochs{m: map[Ino]keptEpoch{}, max: max}
}

// keep records ino's epoch as the inode leaves memory, dropping the
// oldest kept epoch if the ring is full.
func (k *keptEpochs) keep(ino Ino, epoch uint64) {
	if len(k.ring) < k.max {
		// The ring grows as it is used: a store that evicts few inodes
		// holds few slots.
		k.m[ino] = keptEpoch{epoch: epoch, slot: len(k.ring)}
		k.ring = append(k.ring, ino)
		return
	}
	old := k.ring[k.next]
	if e, ok := k.m[old]; ok && e.slot == k.next {
		delete(k.m, old)
	}
	k.ring[k.next] = ino
	k.m[ino] = keptEpoch{epoch: epoch, slot: k.next}
	k.next = (k.next + 1) % k.max
}

// take returns ino's kept epoch and forgets it (the inode is in memory
// again and carries it), or 0 if none was kept.
func (k *keptEpochs) take(ino Ino) uint64 {
	e, ok := k.m[ino]
	if !ok {
		return 0
	}
	delete(k.m, ino)
	return e.epoch
}

// count returns how many epochs are kept.
func (k *keptEpochs) count() int { return len(k.m) }
