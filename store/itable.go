package store

import (
	"errors"
	"sync"
	"syscall"

	"ustore/engine"
	"ustore/evict"
	"ustore/internal/assert"
)

// inodeTable holds the inodes in memory, sharded by number. An inode is
// loaded once and shared; it stays while referenced or while it has
// buffered data. Each in-memory inode is also an entry of the inode
// cache, an evict.Cache that shares the cache budget (--cache-size) with
// tree nodes and clean data blocks: it is charged in bytes for what it
// holds (inode_charge.go), and clean, unreferenced inodes are evicted by
// the same SIEVE hand as nodes and pages — each dropped whole, its page
// maps with it (the 2013 btrfs eviction lesson: never tear an inode's
// state down range by range). An evicted inode's page-cache epoch is kept
// (kept_epochs.go), and the inode continues it when it is loaded again.
//
// Eviction is the hand's, under the cache shard's lock, through tryEvict:
// it takes the table shard's lock and the inode's mu with TryLock only —
// the order elsewhere is mu, then the table shard, then (in an Add) the
// cache shard — and drops the inode from the table in the same step as
// from the cache, so an inode is in the table iff it is in the cache
// (between get's insertion and its Add, only while get holds the
// reference), and a get that finds it may use it.
type inodeTable struct {
	s      *Store
	shards [inodeShards]inodeShard
	// c is the inode cache: every inode of the shards' maps, keyed by
	// number, charged its bytes.
	c *evict.Cache[*inode]
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

func newInodeTable(s *Store, budget *evict.Budget, keptMax int) *inodeTable {
	t := &inodeTable{s: s}
	for i := range t.shards {
		t.shards[i].m = map[Ino]*inode{}
		t.shards[i].kept = newKeptEpochs(keptMax)
	}
	t.c = evict.New[*inode](evict.Options{Budget: budget, TryEvict: t.tryEvict})
	return t
}

func (t *inodeTable) shardOf(ino Ino) *inodeShard { return &t.shards[ino%inodeShards] }

// get returns inode ino with a reference, loading it from the tree on a
// miss (under the shard lock, so an inode is never loaded twice). ENOENT if
// it does not exist or was deleted.
func (t *inodeTable) get(ino Ino) (*inode, error) {
	sh := t.shardOf(ino)
	sh.mu.Lock()
	if in, ok := sh.m[ino]; ok {
		in.refs++
		sh.mu.Unlock()
		t.c.Get(uint64(ino)) // a use: the hand passes it once more
		return in, nil
	}
	in, err := t.s.loadInode(ino)
	if err != nil {
		sh.mu.Unlock()
		return nil, err
	}
	// Its blocks still cached are right for it: nothing changed the file
	// while it was out of memory (kept_epochs.go).
	if in.epoch = sh.kept.take(ino); in.epoch != 0 {
		t.s.stats.epochsResumed.Add(1)
	}
	t.insertLocked(sh, in)
	sh.mu.Unlock()
	t.charge(in)
	return in, nil
}

// add puts a new inode in the table with a reference.
func (t *inodeTable) add(in *inode) {
	sh := t.shardOf(in.ino)
	sh.mu.Lock()
	// A new inode's number was never used in this mount: no epoch can be
	// kept for it, and none may be continued.
	assert.That(sh.kept.take(in.ino) == 0, "store: a new inode's number has a kept cache epoch")
	t.insertLocked(sh, in)
	sh.mu.Unlock()
	t.charge(in)
}

// insertLocked puts in, not yet shared, in shard sh's map (sh.mu held)
// with one reference: the caller's, which keeps it from eviction until
// charge has put it in the cache.
func (t *inodeTable) insertLocked(sh *inodeShard, in *inode) {
	in.refs = 1
	in.charge.Store(in.chargeLocked())
	sh.m[in.ino] = in
	t.fast.Store(in.ino, in)
}

// charge puts in, just inserted, into the inode cache with its charge,
// after the table shard's lock is released: the Add may run an eviction
// pass, which tries table shards' locks.
func (t *inodeTable) charge(in *inode) { t.c.Add(uint64(in.ino), in) }

// rechargeLocked brings in's charge up to date after its page maps
// changed (in.mu held, by one who holds a reference): the cache is told
// only when the charge computed changes — the maps' memory grows by
// doubling, and drops when they are made afresh.
func (t *inodeTable) rechargeLocked(in *inode) {
	in.pages.notePeaks()
	old := in.charge.Load()
	if old == 0 {
		return // not the table's (a replayer's scratch inode), or evicted
	}
	if want := in.chargeLocked(); want != old {
		in.charge.Store(want)
		t.c.Add(uint64(in.ino), in)
	}
}

// put drops a reference.
func (t *inodeTable) put(in *inode) {
	sh := t.shardOf(in.ino)
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

// tryEvict is the inode cache's TryEvict: the hand would drop in. It does,
// from the table too, if in is clean and unused — no reference, no holder
// of its mu (a cached read on a connection's reader, Store.ReadCached; a
// flusher's pass) — and the locks can be had without waiting; otherwise
// in stays, as a pinned entry would.
func (t *inodeTable) tryEvict(_ uint64, e evict.Entry) bool {
	in := e.(*inode)
	sh := t.shardOf(in.ino)
	if !sh.mu.TryLock() {
		return false
	}
	defer sh.mu.Unlock()
	if in.refs > 0 || !in.mu.TryLock() {
		return false
	}
	defer in.mu.Unlock()
	assert.That(sh.m[in.ino] == in, "store: the inode cache holds an inode the table does not")
	t.dropLocked(sh, in)
	return true
}

// dropLocked takes in out of the table and keeps its page-cache epoch
// (sh.mu and in.mu held, in unreferenced). The caller takes it out of the
// inode cache in the same step.
func (t *inodeTable) dropLocked(sh *inodeShard, in *inode) {
	// Unreferenced, so not in the dirty set: its data is all on the
	// device, and what is cached under its epoch is that data.
	assert.That(in.refs == 0 && in.pages.empty(), "store: evicting a referenced inode, or one with buffered pages")
	if in.epoch != 0 && !in.deleted.Load() {
		sh.kept.keep(in.ino, in.epoch)
	}
	delete(sh.m, in.ino)
	t.fast.Delete(in.ino)
	in.charge.Store(0)
	// No reader finds in again: a scan's chunks of it go with it.
	t.s.scanDropAllLocked(in)
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
// inode table shard's map and each cache shard's map and ring (the inode
// cache's and the page cache's) are dropped whole, in one step per shard, whatever they hold — never inode by
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
				t.c.Remove(uint64(ino))
				s.stats.teardownSteps.Add(1)
			}
		}
		sh.m = map[Ino]*inode{}
		sh.kept = newKeptEpochs(sh.kept.max)
		sh.mu.Unlock()
	}
	t.fast.Clear()
	t.c.DropAll()
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
