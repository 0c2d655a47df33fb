package store

import (
	"fmt"
	"log/slog"
	"syscall"
	"time"

	"ustore/engine"
	"ustore/journal"
	"ustore/logtree"
)

// Options configure Open. Zero values mean the defaults.
type Options struct {
	// CacheBytes is the memory budget of the tree node cache, the data
	// page cache (page_cache.go) and the in-memory inodes (itable.go)
	// together: one budget, one SIEVE over all three, each charged in
	// bytes. There is no separate bound on the number of inodes.
	// Default: a quarter of the machine's RAM, at least 64 MiB and at most
	// 4 GiB (defaultCacheBytes).
	CacheBytes int64
	// DirtyBytes is the dirty data budget: buffered file data not yet
	// written back. A writer that would take it past the budget waits for
	// writeback (default 256 MiB, at least 1 MiB).
	DirtyBytes int64
	// DirtyBackgroundBytes: past this much dirty data the flusher starts
	// writing back in the background (default DirtyBytes/4).
	DirtyBackgroundBytes int64
	// DirtyExpire: data dirty for longer is written back by the flusher
	// whatever the total (default 5 s, the commit interval: data written
	// back before a periodic commit is durable with it).
	DirtyExpire time.Duration
	// CommitInterval: see engine.Options (default 5 s).
	CommitInterval time.Duration
	// ScanReadBytes: a sequential run over a file of at least this many
	// bytes is a scan, read through the scan ring and not cached
	// (scan_ring.go). Default CacheBytes/4; negative: no read is a scan.
	ScanReadBytes int64
	// LogDeltaRun is how many delta records may follow a checkpoint of
	// the fsync log (logtree/delta.go; default logtree.DeltaRunDefault,
	// at most engine.LogDeltaRunMax). Ablations.LogNodesEverySync makes
	// every sync a checkpoint whatever it says.
	LogDeltaRun int
	Logger      *slog.Logger
	// Ablations: see journal.Ablations (for benchmarks only; passed to
	// the engine and the log tree).
	journal.Ablations
	// ReadOnly mounts for reading only: every change fails with EROFS and
	// nothing is written to the device (read_only.go).
	ReadOnly bool
	// SkipLogReplay, with ReadOnly, mounts a device whose superblock names
	// an fsync log without it: the last commit, without the fsyncs the log
	// holds, said in a warning. For a damaged tree on which the replay
	// itself fails (read_only.go).
	SkipLogReplay bool
}

func (o Options) withDefaults() (Options, error) {
	if o.CacheBytes == 0 {
		o.CacheBytes = defaultCacheBytes()
	}
	if o.CacheBytes < 0 {
		return o, fmt.Errorf("store: cache budget %d bytes is negative", o.CacheBytes)
	}
	switch {
	case o.LogDeltaRun == 0:
		o.LogDeltaRun = logtree.DeltaRunDefault
	case o.LogDeltaRun < 0 || o.LogDeltaRun > engine.LogDeltaRunMax:
		return o, fmt.Errorf("store: %d delta records after a log checkpoint, want 1 to %d (0 for %d)",
			o.LogDeltaRun, engine.LogDeltaRunMax, logtree.DeltaRunDefault)
	}
	if o.ScanReadBytes == 0 {
		o.ScanReadBytes = max(o.CacheBytes/scanCacheShare, 1)
	}
	if o.DirtyBytes == 0 {
		o.DirtyBytes = 256 << 20
	}
	if o.DirtyBytes < 1<<20 {
		return o, fmt.Errorf("store: dirty budget %d bytes: at least 1 MiB", o.DirtyBytes)
	}
	if o.DirtyBackgroundBytes == 0 {
		o.DirtyBackgroundBytes = o.DirtyBytes / 4
	}
	if o.DirtyBackgroundBytes < 0 || o.DirtyBackgroundBytes > o.DirtyBytes {
		return o, fmt.Errorf("store: background writeback threshold %d outside [0, %d]", o.DirtyBackgroundBytes, o.DirtyBytes)
	}
	if o.DirtyExpire == 0 {
		o.DirtyExpire = 5 * time.Second
	}
	if o.SkipLogReplay && !o.ReadOnly {
		return o, fmt.Errorf("store: skipping the log replay is for a read-only mount only")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

// The default cache budget: a quarter of RAM (the rest is for the dirty
// budget, the kernel and other processes; a store does not own the
// machine), within [cacheBytesMin, cacheBytesMax].
const (
	cacheBytesMin = 64 << 20
	// cacheBytesMax: past 4 GiB a bigger default mostly costs the garbage
	// collector (every cached block is a heap object it scans); ask for
	// more with --cache-size.
	cacheBytesMax = 4 << 30
)

func defaultCacheBytes() int64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return cacheBytesMin
	}
	ram := int64(si.Totalram) * int64(si.Unit)
	return min(max(ram/4, cacheBytesMin), cacheBytesMax)
}

// memoryLimitSlack is what MemoryLimit allows the Go runtime past the two
// budgets: writeback's staging buffers (wbStagingSet: at most the dirty
// budget's worth and 24 MiB, made on first use and kept), the kept epochs of evicted inodes, the runtime's
// own memory (stacks, metadata) and small change. The resident set adds
// what the runtime does not count — the binary's pages (14 MiB for the
// store's test binary) — and what the collector lets past a soft limit
// while a reader churns through cached blocks: 24 MiB keeps it within the
// budgets + 64 MiB (TestMem_InodesAndData: 91.6 MiB peak for a bound of
// 104 with 100,000 inodes, 99.6 with a million; 32 MiB here gave
// 103.1).
const memoryLimitSlack = 24 << 20

// MemoryLimit is the soft memory limit the process should give the Go
// runtime (debug.SetMemoryLimit) for the store's budgets to bound its
// memory: the cache budget (nodes, pages and inodes), the dirty budget,
// and memoryLimitSlack. Without one the collector lets the heap grow to
// twice what is live (GOGC=100) before it runs, and a full cache would
// take twice its budget. `ustore serve` sets it unless GOMEMLIMIT is set.
func (s *Store) MemoryLimit() int64 {
	return s.opts.CacheBytes + s.opts.DirtyBytes + memoryLimitSlack
}
