package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"ustore/dev"
	"ustore/engine"
	"ustore/evict"
	"ustore/logtree"
)

// Store is a mounted filesystem: the namespace and file data on an engine.
type Store struct {
	e    *engine.Engine
	dev  dev.Device
	fs   *engine.Tree
	csum *engine.Tree
	opts Options
	log  *slog.Logger
	// ctx is for commits the store starts on its own (to find space).
	ctx context.Context

	itab        *inodeTable
	pc          *pageCache
	wb          wbState
	wbStaging   wbStagingSet   // writeback's staging buffers (writeback_staging.go)
	readStaging readStagingSet // large device reads' buffers (read_blocks.go)
	nextIno     atomicIno
	creates     createQueues  // each directory's creates in progress (create_batch.go)
	putSeq      atomic.Uint64 // Put's temporary names
	renameMu    sync.RWMutex  // rename: write; fsync's logging: read
	tlog        *logtree.Log  // the fsync log
	track       logTrack
	replay      logtree.Report // what mount's replay did
	uid, gid    uint32
	opMeta      uint64 // tree space one namespace operation may need
	inlineMax   int

	orphansFreed int // the orphans mount freed (orphan.go)

	ra   readAheadState // read_ahead.go
	scan scanRing       // scan_ring.go

	stop        chan struct{}
	flusherDone chan struct{}
	closeOnce   sync.Once
	stats       storeStats
}

// MkfsOptions configure Mkfs.
type MkfsOptions struct {
	NodeSize int // tree node size; 0 means engine.NodeSizeDefault
}

// Mkfs formats d: the engine's trees, and the root directory (inode 256,
// mode 0755), committed.
func Mkfs(d dev.Device, opts MkfsOptions) error {
	if err := engine.Mkfs(d, engine.MkfsOptions{NodeSize: opts.NodeSize}); err != nil {
		return err
	}
	e, err := engine.Mount(d, engine.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	tr, err := e.Start()
	if err != nil {
		return err
	}
	t := now()
	root := engine.InodeItem{Generation: tr.ID(), Transid: tr.ID(), Mode: ModeDir | 0o755, Nlink: 2,
		UID: uint32(os.Getuid()), GID: uint32(os.Getgid()), Atime: t, Mtime: t, Ctime: t, Otime: t}
	err = e.Tree(engine.FSTreeID).InsertItem(tr, inodeKey(engine.RootDirIno), root.Encode(nil))
	tr.End()
	if err != nil {
		return errors.Join(err, e.Close(context.Background()))
	}
	return e.Close(context.Background())
}

// Open mounts the store on d.
func Open(d dev.Device, opts Options) (*Store, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	budget := evict.NewBudget(opts.CacheBytes)
	e, err := engine.Mount(d, engine.Options{CacheBudget: budget, CommitInterval: opts.CommitInterval, Logger: opts.Logger,
		Ablations: opts.Ablations, ReadOnly: opts.ReadOnly})
	if err != nil {
		return nil, err
	}
	s := &Store{
		e: e, dev: d, fs: e.Tree(engine.FSTreeID), csum: e.Tree(engine.CsumTreeID),
		opts: opts, log: opts.Logger, ctx: context.Background(),
		uid: uint32(os.Getuid()), gid: uint32(os.Getgid()),
		opMeta:    uint64(16 * e.NodeSize()),
		inlineMax: engine.FileExtentMaxInline(e.ItemDataMax()),
		stop:      make(chan struct{}), flusherDone: make(chan struct{}),
	}
	if s.fs == nil || s.csum == nil {
		e.Close(context.Background())
		return nil, fmt.Errorf("store: the device has no fs or csum tree: not a ustore store")
	}
	s.itab = newInodeTable(s, budget, keptEpochsPerShard(opts.CacheBytes))
	s.pc = newPageCache(budget)
	s.wb.init(s, opts.DirtyBytes, opts.DirtyBackgroundBytes)
	s.wbStaging.init(wbStagingCapacity(opts.DirtyBytes))
	s.readStaging.init()
	s.tlog = logtree.New(e)
	s.tlog.Ablations = opts.Ablations
	s.tlog.DeltaRun = opts.LogDeltaRun
	if opts.Ablations.LogNodesEverySync {
		s.tlog.DeltaRun = 0
	}
	if opts.ReadOnly {
		if err := checkNoPendingLog(e, opts); err != nil {
			e.Close(context.Background())
			return nil, err
		}
	} else {
		rep, err := logtree.Replay(s.ctx, e, &replayer{s: s, touched: map[Ino]struct{}{}}, s.log)
		if err != nil {
			e.Close(context.Background())
			return nil, fmt.Errorf("store: replaying the fsync log: %w", err)
		}
		s.replay = rep
		// After replay: an inode the log gave back a name is no orphan
		// (replay drops the ones it left nameless itself).
		n, err := s.freeOrphans()
		if err != nil {
			e.Close(context.Background())
			return nil, err
		}
		s.orphansFreed = n
	}
	if _, err := s.stat(engine.RootDirIno); err != nil {
		e.Close(context.Background())
		return nil, fmt.Errorf("store: no root directory (inode %d): %w", engine.RootDirIno, err)
	}
	// Only creates need the next inode number: a read-only mount skips
	// the scan of the fs tree's rightmost path.
	next := engine.FirstFreeIno - 1
	if !opts.ReadOnly {
		if next, err = s.highestIno(); err != nil {
			e.Close(context.Background())
			return nil, err
		}
	}
	s.nextIno.Store(next + 1)
	go s.flusher()
	s.log.Info("store mounted", "duration", time.Since(start), "next_ino", next+1,
		"node_size", e.NodeSize(), "orphans_freed", s.orphansFreed, "dirty_budget", opts.DirtyBytes, "read_only", opts.ReadOnly)
	return s, nil
}

// highestIno returns the highest inode number in the fs tree, below the
// orphan items' objectid (a read-only mount leaves them; none is an
// inode's).
func (s *Store) highestIno() (Ino, error) {
	hi := engine.FirstFreeIno - 1
	err := s.fs.IterateReverse(orphanKey(0), func(k engine.Key, _ []byte) bool {
		if k.ObjectID >= engine.OrphanObjectID {
			return true
		}
		hi = max(hi, k.Ino())
		return false
	})
	return hi, err
}

// Close writes back every dirty inode, commits, stops the flusher and
// releases the caches. The store is unusable afterwards.
func (s *Store) Close(ctx context.Context) error {
	err := errors.New("store: already closed")
	s.closeOnce.Do(func() {
		start := time.Now()
		close(s.stop)
		<-s.flusherDone
		s.readAheadClose()
		werr := s.sync(ctx)
		cerr := s.e.Close(ctx)
		inodes, pages := s.itab.count(), s.pc.c.Len()
		tstart := time.Now()
		s.teardown()
		err = errors.Join(werr, cerr)
		s.log.Info("store closed", "duration", time.Since(start), "inodes_released", inodes,
			"pages_released", pages, "teardown", time.Since(tstart), "err", err)
	})
	return err
}

// OrphansFreed reports how many orphans (files open and unlinked when the
// store last stopped) the mount freed.
func (s *Store) OrphansFreed() int { return s.orphansFreed }

// Replay reports what the mount's log replay did.
func (s *Store) Replay() logtree.Report { return s.replay }

// LogStats returns the fsync log's counters and those of its log trees.
func (s *Store) LogStats() (logtree.Stats, engine.TreeStats) {
	return s.tlog.Stats(), s.e.LogTreeStats()
}

// Engine returns the engine under the store (for fsck and tests).
func (s *Store) Engine() *engine.Engine { return s.e }
