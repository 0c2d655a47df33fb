package store

import (
	"errors"
	"sync"
	"syscall"

	"ustore/engine"
	"ustore/internal/assert"
)

// inodeTable holds the inodes in memory, sharded by number. An inode is
// loaded once and shared; it stays while referenced or while it has
// buffered data, and clean, unreferenced inodes are evicted past
// InodeCacheMax — each dropped whole, its page maps with it (the 2013 btrfs
// eviction lesson: never tear an inode's state down range by range). An
// evicted inode's page-cache epoch is kept (kept_epochs.go), and the inode
// continues it when it is loaded again.
type inodeTable struct {
	s      *Store
	shards [inodeShards]inodeShard
	max    int
	// fast mirrors the shards' maps for lookups that take no lock and no
	// reference: fsync's already-durable check (peek).
	fast sync.Map // Ino → *inode; always keyed by Ino, as a uint64 key would miss
}

const inodeShards = 64

type inodeShard struct {
	mu   sync.Mutex
	m    map[Ino]*inode
	kept keptEpochs // the epochs of the shard's evicted inodes
}

func newInodeTable(s *Store, max, keptMax int) *inodeTable {
	t := &inodeTable{s: s, max: max/inodeShards + 1}
	for i := range t.shards {
		t.shards[i].m = map[Ino]*inode{}
		t.shards[i].kept = newKeptEpochs(keptMax)
	}
	return t
}

// get returns inode ino with a reference, loading it from the tree on a
// miss (under the shard lock, so an inode is never loaded twice). ENOENT if
// it does not exist or was deleted.
func (t *inodeTable) get(ino Ino) (*inode, error) {
	sh := &t.shards[ino%inodeShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if in, ok := sh.m[ino]; ok {
		in.refs++
		return in, nil
	}
	in, err := t.s.loadInode(ino)
	if err != nil {
		return nil, err
	}
	// Its blocks still cached are right for it: nothing changed the file
	// while it was out of memory (kept_epochs.go).
	if in.epoch = sh.kept.take(ino); in.epoch != 0 {
		t.s.stats.epochsResumed.Add(1)
	}
	in.refs = 1
	if len(sh.m) >= t.max {
		t.evictLocked(sh, len(sh.m)-t.max+1)
	}
	sh.m[ino] = in
	t.fast.Store(ino, in)
	return in, nil
}

// add puts a new inode in the table with a reference.
func (t *inodeTable) add(in *inode) {
	sh := &t.shards[in.ino%inodeShards]
	sh.mu.Lock()
	// A new inode's number was never used in this mount: no epoch can be
	// kept for it, and none may be continued.
	assert.That(sh.kept.take(in.ino) == 0, "store: a new inode's number has a kept cache epoch")
	in.refs = 1
	sh.m[in.ino] = in
	t.fast.Store(in.ino, in)
	sh.mu.Unlock()
}

// put drops a reference.
func (t *inodeTable) put(in *inode) {
	sh := &t.shards[in.ino%inodeShards]
	sh.mu.Lock()
	in.refs--
	sh.mu.Unlock()
}

// peek returns inode ino if it is in memory, taking no lock and no
// reference: the caller may only read its atomics.
func (t *inodeTable) peek(ino Ino) *inode {
	if v, ok := t.fast.Load(ino); ok {
		return v.(*inode)
	}
	return nil
}

// evictLocked drops up to n clean, unreferenced inodes of shard sh, and
// keeps their page-cache epochs. An inode whose mu is held is in use even
// without a reference (a cached read on a connection's reader,
// Store.ReadCached; a flusher's pass): it stays. TryLock, because the
// order is mu before the shard's lock.
func (t *inodeTable) evictLocked(sh *inodeShard, n int) {
	for ino, in := range sh.m {
		if n <= 0 {
			return
		}
		// An inode with buffered data is referenced by the dirty set.
		if in.refs > 0 || !in.mu.TryLock() {
			continue
		}
		// Unreferenced, so not in the dirty set: its data is all on the
		// device, and what is cached under its epoch is that data.
		assert.That(in.pages.empty(), "store: an unreferenced inode has buffered pages")
		if in.epoch != 0 && !in.deleted.Load() {
			sh.kept.keep(ino, in.epoch)
		}
		delete(sh.m, ino)
		t.fast.Delete(ino)
		in.mu.Unlock()
		n--
	}
}

// ref adds a reference to an inode already in the table.
func (t *inodeTable) ref(in *inode) {
	sh := &t.shards[in.ino%inodeShards]
	sh.mu.Lock()
	in.refs++
	sh.mu.Unlock()
}

// count returns how many inodes are in memory.
func (t *inodeTable) count() int {
	n := 0
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}

// keptCount returns how many evicted inodes' epochs are kept.
func (t *inodeTable) keptCount() int {
	n := 0
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		n += sh.kept.count()
		sh.mu.Unlock()
	}
	return n
}

// teardown drops every in-memory inode and cached block, at unmount: each
// inode table shard's map and each cache shard's map and ring are dropped
// whole, in one step per shard, whatever they hold — never inode by
// inode, range by range (the 2013 btrfs patch "fix very slow inode
// eviction and fs unmount": 98 s of unmount became 1.8 s). The garbage
// collector, or the process's exit, takes the rest. With the per-range
// ablation every inode's blocks are removed one by one over its size, then
// the inode from its map; each inode and block so visited counts one
// teardown step (the bulk teardown counts none).
func (s *Store) teardown() {
	t := s.itab
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		if s.opts.TeardownPerRange {
			for ino, in := range sh.m {
				in.mu.Lock()
				if in.epoch != 0 {
					s.teardownPerRange(in)
				}
				in.mu.Unlock()
				delete(sh.m, ino)
				t.fast.Delete(ino)
				s.stats.teardownSteps.Add(1)
			}
		}
		sh.m = map[Ino]*inode{}
		sh.kept = newKeptEpochs(sh.kept.max)
		sh.mu.Unlock()
	}
	t.fast.Clear()
	s.pc.c.Clear()
}

// loadInode reads inode ino's item (and a directory's next index).
func (s *Store) loadInode(ino Ino) (*inode, error) {
	b, err := s.fs.Lookup(inodeKey(ino))
	if errors.Is(err, engine.ErrNotFound) {
		return nil, syscall.ENOENT
	}
	if err != nil {
		return nil, err
	}
	item, err := engine.DecodeInodeItem(b)
	if err != nil {
		return nil, err
	}
	in := newInodeOf(ino, item)
	in.lastTrans.Store(item.Transid)
	// Only creates need a directory's next index; a read-only store does
	// not look for it (a damaged node under the directory's last entry
	// would make the directory, or the root and so the mount, fail).
	if in.isDir() && !s.opts.ReadOnly {
		in.nextIndex = 2
		from := engine.InoKey(ino, engine.TypeDirIndex, ^uint64(0))
		err := s.fs.IterateReverse(from, func(k engine.Key, _ []byte) bool {
			if k.Ino() == ino && k.Type == engine.TypeDirIndex {
				in.nextIndex = k.Offset + 1
			}
			return false
		})
		if err != nil {
			return nil, err
		}
	}
	return in, nil
}
