// Package storebench measures the filesystem (store/) on a real device the
// way fio measures a raw file: sequential writes and reads of one request
// size, and random 4 KiB overwrites, reporting MB/s, ops/s and how many
// extents writeback made. `ustore bench store` is its CLI, and
// bench/store-vs-fio.sh runs it beside fio on the same disk.
//
// Workloads (Config.Workloads), run in this order whatever order they are
// given in:
//
//	seqwrite   create a file, write Total bytes in BS requests from offset 0
//	           up, then Sync; the time includes the Sync
//	seqread    remount the store (Close, Open: nothing of the file is in
//	           memory), then read the file back in BS requests; the file is
//	           the one seqwrite wrote — without seqwrite it is written first,
//	           untimed and unreported
//	randwrite  on a freshly formatted store: a FileSize file written
//	           sequentially and synced (untimed), then random RandBS-aligned
//	           overwrites of RandBS bytes for Duration (or Count of them),
//	           then Sync; the time includes the Sync
//
// # Invariants
//
//  1. The device file is laid out (written in full) before the store is
//     formatted, so that neither the store's writes nor its flushes pay for
//     allocating the backing file's blocks (a sparse file doubles the flush
//     cost on ext4).
//  2. Every workload group starts from a fresh mkfs.
//  3. seqread checks what it reads: every 4 KiB block carries its offset.
package storebench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"ustore/bench/layout"
	"ustore/dev"
	"ustore/dev/devopen"
	"ustore/store"
)

// Workloads lists the accepted workload names, in the order they run.
var Workloads = []string{"seqwrite", "seqread", "randwrite"}

// Config is one benchmark invocation.
type Config struct {
	File     string          // device file (or block device)
	Size     int64           // device bytes; a regular file is laid out to this size
	Backend  devopen.Backend // default auto
	NodeSize int             // tree node size for mkfs; 0: the engine's default

	Workloads []string
	Total     int64 // seqwrite/seqread: bytes of the file
	BS        int   // seqwrite/seqread: request size
	FileSize  int64 // randwrite: file size
	RandBS    int   // randwrite: request size (4096)
	Duration  time.Duration
	Count     int64  // randwrite: number of overwrites; when > 0 Duration is ignored
	Seed      uint64 // randwrite offsets

	// Store options (zero: the store's defaults).
	DirtyBytes int64
	CacheBytes int64

	Logger *slog.Logger // the store's and the device's; default: warnings to stderr
	// Progress, when set, is told what phase starts.
	Progress func(phase string)
	// Window, when set, is called about once a second during each
	// workload's timed window (window_progress.go).
	Window func(WindowProgress)
}

// Result is one workload's figures. MB are 10^6 bytes, as fio's MB/s.
type Result struct {
	Workload string  `json:"workload"`
	Backend  string  `json:"backend"`
	BS       int     `json:"bs"`
	Bytes    int64   `json:"bytes"`
	Ops      int64   `json:"ops"`
	Seconds  float64 `json:"seconds"` // the timed phase, final Sync included
	// SyncSeconds is the final Sync's share of Seconds (writes only).
	SyncSeconds float64 `json:"sync_seconds,omitempty"`
	MBps        float64 `json:"mb_per_s"`
	IOPS        float64 `json:"iops"`
	// Store counters over the timed phase.
	ExtentsWritten  uint64 `json:"extents_written"`
	WritebackBlocks uint64 `json:"writeback_blocks"`
	// FileSize is the file the workload ran on; PrepareSeconds the untimed
	// time to write it first (randwrite, or seqread without seqwrite).
	FileSize       int64   `json:"file_size"`
	PrepareSeconds float64 `json:"prepare_seconds,omitempty"`
	DirtyBudget    int64   `json:"dirty_budget"`
}

func (c *Config) has(w string) bool { return slices.Contains(c.Workloads, w) }

// Validate checks the configuration (Run does too).
func (c *Config) Validate() error {
	if c.File == "" {
		return errors.New("no device file")
	}
	if len(c.Workloads) == 0 {
		return errors.New("no workload")
	}
	for _, w := range c.Workloads {
		if !slices.Contains(Workloads, w) {
			return fmt.Errorf("unknown workload %q (want seqwrite, seqread or randwrite)", w)
		}
	}
	const sector = dev.SectorSize
	if c.has("seqwrite") || c.has("seqread") {
		if c.BS <= 0 || c.BS%sector != 0 {
			return fmt.Errorf("request size %d: must be a positive multiple of %d", c.BS, sector)
		}
		if c.Total < int64(c.BS) {
			return fmt.Errorf("total %d: smaller than one request of %d", c.Total, c.BS)
		}
	}
	if c.has("randwrite") {
		if c.RandBS <= 0 || c.RandBS%sector != 0 {
			return fmt.Errorf("random request size %d: must be a positive multiple of %d", c.RandBS, sector)
		}
		if c.FileSize < int64(c.RandBS) {
			return fmt.Errorf("file size %d: smaller than one request of %d", c.FileSize, c.RandBS)
		}
		if c.Count <= 0 && c.Duration <= 0 {
			return errors.New("randwrite needs a positive duration or count")
		}
	}
	// The largest file must fit with room for metadata and copy-on-write.
	need := max(c.Total, c.FileSize+c.FileSize/4)
	if c.Size < need+need/16+64<<20 {
		return fmt.Errorf("device size %d is too small for a %d-byte file (at least %d)", c.Size, need, need+need/16+64<<20)
	}
	return nil
}

func (c *Config) phase(format string, args ...any) {
	if c.Progress != nil {
		c.Progress(fmt.Sprintf(format, args...))
	}
}

// Run lays out the device file, then runs the selected workloads. It
// returns the results of the workloads that finished even when a later one
// failed.
func Run(cfg Config) ([]Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("storebench: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	cfg.Total = cfg.Total / int64(cfg.BS) * int64(cfg.BS)
	if cfg.RandBS > 0 {
		cfg.FileSize = cfg.FileSize / int64(cfg.RandBS) * int64(cfg.RandBS)
	}
	laid, err := layout.File(cfg.File, cfg.Size, cfg.phase)
	if err != nil {
		return nil, fmt.Errorf("storebench: laying out %s: %w", cfg.File, err)
	}
	if laid > 0 {
		cfg.Size = laid
	}
	d, _, err := devopen.Open(cfg.File, devopen.Options{Size: cfg.Size, Backend: cfg.Backend, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	b := &bench{cfg: &cfg, d: d}
	var results []Result
	if cfg.has("seqwrite") || cfg.has("seqread") {
		rs, err := b.sequential()
		results = append(results, rs...)
		if err != nil {
			return results, err
		}
	}
	if cfg.has("randwrite") {
		r, err := b.random()
		if err != nil {
			return results, err
		}
		results = append(results, r)
	}
	return results, nil
}

type bench struct {
	cfg *Config
	d   dev.Device
	s   *store.Store
}

// format makes a fresh store on the device and mounts it.
func (b *bench) format() error {
	b.cfg.phase("mkfs %s (%d bytes)", b.cfg.File, b.d.Size())
	if err := store.Mkfs(b.d, store.MkfsOptions{NodeSize: b.cfg.NodeSize}); err != nil {
		return fmt.Errorf("mkfs: %w", err)
	}
	return b.mount()
}

func (b *bench) mount() error {
	s, err := store.Open(b.d, store.Options{DirtyBytes: b.cfg.DirtyBytes, CacheBytes: b.cfg.CacheBytes, Logger: b.cfg.Logger})
	if err != nil {
		return fmt.Errorf("mount: %w", err)
	}
	b.s = s
	return nil
}

func (b *bench) unmount() error {
	s := b.s
	b.s = nil
	if s == nil {
		return nil
	}
	if err := s.Close(context.Background()); err != nil {
		return fmt.Errorf("unmount: %w", err)
	}
	return nil
}

func (b *bench) dirtyBudget() int64 {
	if b.cfg.DirtyBytes > 0 {
		return b.cfg.DirtyBytes
	}
	return 256 << 20 // store.Options' default
}

// sequential runs seqwrite and seqread on one store.
func (b *bench) sequential() (results []Result, err error) {
	cfg := b.cfg
	if err := b.format(); err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, b.unmount()) }()
	a, err := b.s.Create(store.RootIno, "seq", 0o644)
	if err != nil {
		return nil, err
	}
	cfg.phase("seqwrite: %d bytes in %d-byte requests", cfg.Total, cfg.BS)
	var wt windowTicker
	if cfg.has("seqwrite") { // else the file is only written for seqread, untimed
		wt = cfg.window("seqwrite", cfg.Total, 0)
	}
	w, err := b.writeSeq(a.Ino, cfg.Total, cfg.BS, wt)
	if err != nil {
		return nil, err
	}
	if cfg.has("seqwrite") {
		results = append(results, w)
	}
	if !cfg.has("seqread") {
		return results, nil
	}
	cfg.phase("seqread: remount, then %d bytes in %d-byte requests", cfg.Total, cfg.BS)
	if err := b.unmount(); err != nil {
		return results, err
	}
	if err := b.mount(); err != nil {
		return results, err
	}
	r, err := b.readSeq(a.Ino, cfg.Total, cfg.BS, cfg.window("seqread", cfg.Total, 0))
	if err != nil {
		return results, err
	}
	if !cfg.has("seqwrite") {
		r.PrepareSeconds = w.Seconds
	}
	return append(results, r), nil
}

// pattern fills buf with pseudo-random bytes.
func pattern(n int, seed uint64) []byte {
	buf := dev.AlignedBuffer(n)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	for i := 0; i+8 <= n; i += 8 {
		v := rng.Uint64()
		for j := range 8 {
			buf[i+j] = byte(v >> (8 * j))
		}
	}
	return buf
}

// stamp writes each 4 KiB block's file offset into its first 8 bytes.
func stamp(buf []byte, off int64) {
	for i := 0; i+8 <= len(buf); i += dev.SectorSize {
		putU64(buf[i:], uint64(off)+uint64(i))
	}
}

func putU64(b []byte, v uint64) {
	for j := range 8 {
		b[j] = byte(v >> (8 * j))
	}
}

func getU64(b []byte) uint64 {
	var v uint64
	for j := range 8 {
		v |= uint64(b[j]) << (8 * j)
	}
	return v
}

// writeSeq writes total bytes of ino in bs requests, then syncs,
// reporting to wt.
func (b *bench) writeSeq(ino store.Ino, total int64, bs int, wt windowTicker) (Result, error) {
	buf := pattern(bs, 1)
	before := b.s.Stats()
	start := time.Now()
	var ops int64
	for off := int64(0); off < total; off += int64(bs) {
		stamp(buf, off)
		if _, err := b.s.Write(ino, uint64(off), buf); err != nil {
			return Result{}, err
		}
		ops++
		wt.tick(off + int64(bs))
	}
	syncStart := time.Now()
	if err := b.s.Sync(context.Background()); err != nil {
		return Result{}, err
	}
	end := time.Now()
	after := b.s.Stats()
	return b.result("seqwrite", bs, total, ops, end.Sub(start), end.Sub(syncStart), before, after, total), nil
}

// readSeq reads ino back in bs requests and checks each block's stamp,
// reporting to wt.
func (b *bench) readSeq(ino store.Ino, total int64, bs int, wt windowTicker) (Result, error) {
	buf := dev.AlignedBuffer(bs)
	before := b.s.Stats()
	start := time.Now()
	var ops, got int64
	for off := int64(0); off < total; off += int64(bs) {
		n, err := b.s.Read(ino, uint64(off), buf)
		if err != nil {
			return Result{}, err
		}
		if want := min(int64(bs), total-off); int64(n) != want {
			return Result{}, fmt.Errorf("seqread: read %d bytes at offset %d, want %d", n, off, want)
		}
		for i := 0; i+8 <= n; i += dev.SectorSize {
			if v := getU64(buf[i:]); v != uint64(off)+uint64(i) {
				return Result{}, fmt.Errorf("seqread: block at offset %d holds the stamp %d: wrong data", off+int64(i), v)
			}
		}
		got += int64(n)
		ops++
		wt.tick(got)
	}
	el := time.Since(start)
	return b.result("seqread", bs, got, ops, el, 0, before, b.s.Stats(), total), nil
}

// random runs randwrite on a fresh store.
func (b *bench) random() (res Result, err error) {
	cfg := b.cfg
	if err := b.format(); err != nil {
		return Result{}, err
	}
	defer func() { err = errors.Join(err, b.unmount()) }()
	a, err := b.s.Create(store.RootIno, "rand", 0o644)
	if err != nil {
		return Result{}, err
	}
	cfg.phase("randwrite: laying out a %d-byte file", cfg.FileSize)
	prep, err := b.writeSeq(a.Ino, cfg.FileSize, 1<<20, windowTicker{})
	if err != nil {
		return Result{}, err
	}
	if cfg.Count > 0 {
		cfg.phase("randwrite: %d random %d-byte overwrites, then sync", cfg.Count, cfg.RandBS)
	} else {
		cfg.phase("randwrite: random %d-byte overwrites for %v, then sync", cfg.RandBS, cfg.Duration)
	}
	buf := pattern(cfg.RandBS, 2)
	blocks := uint64(cfg.FileSize / int64(cfg.RandBS))
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x7a4d))
	before := b.s.Stats()
	start := time.Now()
	deadline := start.Add(cfg.Duration)
	wt := cfg.window("randwrite", cfg.Count, cfg.Duration)
	if cfg.Count > 0 {
		wt.p.Duration = 0
	}
	var ops int64
	for {
		if cfg.Count > 0 {
			if ops >= cfg.Count {
				break
			}
		} else if ops%64 == 0 && time.Now().After(deadline) {
			break
		}
		off := rng.Uint64N(blocks) * uint64(cfg.RandBS)
		stamp(buf, int64(off))
		if _, err := b.s.Write(a.Ino, off, buf); err != nil {
			return Result{}, err
		}
		ops++
		if ops%64 == 0 {
			wt.tick(ops)
		}
	}
	syncStart := time.Now()
	if err := b.s.Sync(context.Background()); err != nil {
		return Result{}, err
	}
	end := time.Now()
	res = b.result("randwrite", cfg.RandBS, ops*int64(cfg.RandBS), ops, end.Sub(start), end.Sub(syncStart),
		before, b.s.Stats(), cfg.FileSize)
	res.PrepareSeconds = prep.Seconds
	return res, nil
}

func (b *bench) result(w string, bs int, bytes, ops int64, el, syncEl time.Duration, before, after store.Stats, fileSize int64) Result {
	sec := el.Seconds()
	return Result{
		Workload: w, Backend: b.d.Backend(), BS: bs, Bytes: bytes, Ops: ops,
		Seconds: sec, SyncSeconds: syncEl.Seconds(),
		MBps: float64(bytes) / sec / 1e6, IOPS: float64(ops) / sec,
		ExtentsWritten:  after.ExtentsWritten - before.ExtentsWritten,
		WritebackBlocks: after.WritebackBlocks - before.WritebackBlocks,
		FileSize:        fileSize, DirtyBudget: b.dirtyBudget(),
	}
}

// WriteText prints results as a table.
func WriteText(w io.Writer, results []Result) {
	fmt.Fprintf(w, "%-10s %8s %12s %10s %9s %10s %8s %9s %10s\n",
		"workload", "bs", "bytes", "seconds", "MB/s", "ops/s", "sync s", "extents", "wb blocks")
	for _, r := range results {
		fmt.Fprintf(w, "%-10s %8d %12d %10.3f %9.1f %10.0f %8.3f %9d %10d\n",
			r.Workload, r.BS, r.Bytes, r.Seconds, r.MBps, r.IOPS, r.SyncSeconds, r.ExtentsWritten, r.WritebackBlocks)
	}
	if len(results) > 0 {
		fmt.Fprintf(w, "backend %s, dirty budget %d bytes\n", results[0].Backend, results[0].DirtyBudget)
	}
}
