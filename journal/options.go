package journal

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Options configures a Journal. Zero values mean the defaults.
type Options struct {
	// CommitInterval: a running transaction is committed at most this long
	// after it began (its first handle started). 0 means 5 s; at most 300 s.
	CommitInterval time.Duration
	// DirtyBytesMax: once AddDirty takes the running transaction's dirty
	// metadata past this many bytes, it is committed. 0 means 64 MiB.
	DirtyBytesMax int64
	// Commit does the work of committing transaction t: write back its data,
	// write its nodes, flush, write the superblock, flush. It runs on the
	// journal's committer goroutine after every handle of t has ended, while
	// t+1 may already run. It must not wait for a commit (CommitNow,
	// WaitCommitted on t or later): it is the commit. An error makes the
	// journal fail (see ErrFailed). Required.
	Commit func(ctx context.Context, t Transid) error
	// Committed, when set, is called on the committer goroutine after
	// commitSeq has been published for t and before WaitCommitted and
	// CommitNow callers waiting for t wake: the engine releases t's pinned
	// blocks there. The next commit waits for it to return.
	Committed func(t Transid)
	// Logger receives the one line that reports a failed commit, and a debug
	// line per commit; nil means slog.Default().
	Logger *slog.Logger
	// FirstTransid is the id of the first transaction after mount: the last
	// committed transid + 1. 0 means 1 (nothing was ever committed).
	FirstTransid Transid
	// Ablations switch mechanisms off for benchmarks; the zero value is
	// the product. Only CommittedLocked concerns the journal.
	Ablations
}

// Ablations each switch off one mechanism of the fsync path, so that a
// benchmark can measure what it is worth against the same code without it
// (docs/BENCHMARKS.md). They change speed only, never an answer, and the
// zero value, every mechanism on, is what the product runs. They are
// defined here, in the lowest package that reads one, and passed down
// whole: store.Options → engine.Options → journal.Options, and
// store.Options → logtree.Log. `ustore serve` sets them with hidden
// --ablate-* flags (cmd/ustore/command_serve.go), which bench/ scripts use.
type Ablations struct {
	// CommittedLocked makes journal.Committed take the journal's state
	// mutex and read under it, as jbd2_transaction_committed did before
	// 2024, instead of one atomic load (ustore serve
	// --ablate-committed-lock; ustore bench committed-check): the answers
	// are the same, only slower under contention.
	CommittedLocked bool
	// LogInsertSearch makes fsync find an inode item already in the log
	// with an inserting search (parent write locks, may split) instead of
	// a leaf-only one (logtree/writer.go; ustore serve
	// --ablate-log-leaf-search; ustore bench fsync-randwrite).
	LogInsertSearch bool
	// TeardownPerRange makes the store drop an inode's cached data blocks
	// one block at a time over the file's size — on truncate, deletion and
	// unmount — instead of all at once (a new cache epoch; at unmount, the
	// cache cleared whole), as btrfs did before the 2013 patch "fix very
	// slow inode eviction and fs unmount" (store/page_cache.go; ustore
	// serve --ablate-teardown-per-range; bench/unmount.sh).
	TeardownPerRange bool
	// LogNodesEverySync makes every log sync a checkpoint — the log tree's
	// dirty nodes written beside the chain record, as before format 6 —
	// instead of a delta record carrying the sync's changes when they fit
	// (logtree/delta.go; ustore serve --ablate-log-deltas;
	// bench/fsync-vs-peers.sh).
	LogNodesEverySync bool
}

// resolve checks o and fills in its defaults.
func (o Options) resolve() (Options, error) {
	if o.Commit == nil {
		return o, fmt.Errorf("%w: Options.Commit is nil", ErrOptions)
	}
	switch {
	case o.CommitInterval == 0:
		o.CommitInterval = commitIntervalDefault
	case o.CommitInterval < 0 || o.CommitInterval > commitIntervalMax:
		return o, fmt.Errorf("%w: CommitInterval %v, want (0, %v] (0 for %v)",
			ErrOptions, o.CommitInterval, commitIntervalMax, commitIntervalDefault)
	}
	switch {
	case o.DirtyBytesMax == 0:
		o.DirtyBytesMax = dirtyBytesMaxDefault
	case o.DirtyBytesMax < 0:
		return o, fmt.Errorf("%w: DirtyBytesMax %d is negative", ErrOptions, o.DirtyBytesMax)
	}
	if o.FirstTransid == 0 {
		o.FirstTransid = 1
	}
	if o.FirstTransid > transidMax {
		return o, fmt.Errorf("%w: FirstTransid %d leaves no transaction ids", ErrOptions, o.FirstTransid)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}
