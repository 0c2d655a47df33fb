package fsyncbench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"
)

// CsumFsyncConfig configures csum-fsync. Zero values mean the defaults.
type CsumFsyncConfig struct {
	Files      int           // files per phase (default 2, as sysbench --file-num=2)
	LargeSize  int64         // each file of the large phase (default 2 GiB)
	SmallSize  int64         // each file of the small phase (default 4 MiB)
	BS         int           // bytes per write (default 4096)
	FsyncEvery int           // writes between rounds of fsyncs (default 100)
	Duration   time.Duration // the measured window of each phase (default 10 s)
	Warmup     time.Duration // untimed, before each window (default 0)
	Options
}

func (c CsumFsyncConfig) withDefaults() CsumFsyncConfig {
	if c.Files == 0 {
		c.Files = 2
	}
	if c.LargeSize == 0 {
		c.LargeSize = 2 << 30
	}
	if c.SmallSize == 0 {
		c.SmallSize = 4 << 20
	}
	if c.BS == 0 {
		c.BS = 4096
	}
	if c.FsyncEvery == 0 {
		c.FsyncEvery = 100
	}
	if c.Duration == 0 {
		c.Duration = 10 * time.Second
	}
	return c
}

// Validate checks the configuration (after its defaults).
func (c CsumFsyncConfig) Validate() error {
	c = c.withDefaults()
	if c.Files < 1 || c.Files > jobsMax {
		return fmt.Errorf("files %d: want 1 to %d", c.Files, jobsMax)
	}
	if c.BS < 1 || c.BS > ioBytesMax || c.SmallSize < int64(c.BS) || c.LargeSize < c.SmallSize {
		return fmt.Errorf("bs %d, small %d, large %d: want 1 ≤ bs ≤ %d, bs ≤ small ≤ large", c.BS, c.SmallSize, c.LargeSize, ioBytesMax)
	}
	if c.FsyncEvery < 1 || c.Duration < 0 || c.Warmup < 0 {
		return errors.New("fsync-every must be at least 1, duration and warm-up not negative")
	}
	return nil
}

// CsumGoal is the most the large files' fsync latency may be over the
// small files' (median and mean): fsync's cost must follow the change, not
// the file's size.
const CsumGoal = 1.2

// CsumPhase is one phase's figures.
type CsumPhase struct {
	Files          int      `json:"files"`
	FileSize       int64    `json:"file_size"`
	Seconds        float64  `json:"seconds"`
	Writes         int64    `json:"writes"`
	Fsyncs         int64    `json:"fsyncs"`
	RequestsPerSec float64  `json:"requests_per_sec"` // writes and fsyncs, as sysbench's events
	WritesPerSec   float64  `json:"writes_per_sec"`
	Fsync          Latency  `json:"fsync"`
	Counters       Counters `json:"counters,omitempty"`
}

// CsumFsyncResult is csum-fsync's figures: the large phase, the small
// phase, and how the fsync latencies compare.
type CsumFsyncResult struct {
	Workload   string    `json:"workload"` // "csum-fsync"
	Target     string    `json:"target"`
	BS         int       `json:"bs"`
	FsyncEvery int       `json:"fsync_every"`
	Large      CsumPhase `json:"large"`
	Small      CsumPhase `json:"small"`
	// P50Ratio and MeanRatio are the large phase's fsync latency over the
	// small phase's; the goal is at most CsumGoal.
	P50Ratio  float64 `json:"fsync_p50_ratio"`
	MeanRatio float64 `json:"fsync_mean_ratio"`
}

// CsumFsync runs csum-fsync on t: the large files first, then the small.
func CsumFsync(ctx context.Context, t Target, cfg CsumFsyncConfig) (res CsumFsyncResult, err error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	res = CsumFsyncResult{Workload: "csum-fsync", Target: t.Name(), BS: cfg.BS, FsyncEvery: cfg.FsyncEvery}
	large, small := cfg, cfg
	large.window, large.windows = cfg.at(0, 2)
	small.window, small.windows = cfg.at(1, 2)
	if res.Large, err = csumPhase(ctx, t, large, "large", cfg.LargeSize); err != nil {
		return res, fmt.Errorf("csum-fsync, large files: %w", err)
	}
	if res.Small, err = csumPhase(ctx, t, small, "small", cfg.SmallSize); err != nil {
		return res, fmt.Errorf("csum-fsync, small files: %w", err)
	}
	if res.Small.Fsync.P50US > 0 {
		res.P50Ratio = res.Large.Fsync.P50US / res.Small.Fsync.P50US
		res.MeanRatio = res.Large.Fsync.MeanUS / res.Small.Fsync.MeanUS
	}
	return res, nil
}

// csumPhase lays out the phase's files, syncs (sysbench's prepare, then
// sync), and runs one thread: FsyncEvery writes to random blocks of random
// files, then an fsync of every file, for the window.
func csumPhase(ctx context.Context, t Target, cfg CsumFsyncConfig, label string, size int64) (ph CsumPhase, err error) {
	ph = CsumPhase{Files: cfg.Files, FileSize: size}
	c, err := t.Connect(ctx)
	if err != nil {
		return ph, err
	}
	defer func() { err = errors.Join(err, c.Close()) }()
	dir := runDir("csum-fsync-" + label)
	if err := c.Mkdir(dir); err != nil {
		return ph, err
	}
	names := make([]string, cfg.Files)
	files := make([]File, cfg.Files)
	cfg.phase("laying out %d files of %d bytes in %s", cfg.Files, size, dir)
	for i := range names {
		names[i] = "test_file." + strconv.Itoa(i) // sysbench's names
		if err := layOut(c, dir+"/"+names[i], size, cfg.Seed+uint64(i)); err != nil {
			return ph, err
		}
	}
	if err := c.Sync(); err != nil {
		return ph, err
	}
	if !cfg.Keep {
		defer func() {
			if err == nil {
				err = removeAll(c, dir, names)
			}
		}()
	}
	for i, n := range names {
		if files[i], err = c.Open(dir + "/" + n); err != nil {
			return ph, err
		}
		defer func() { err = errors.Join(err, files[i].Close()) }()
	}
	before, err := counters(ctx, t)
	if err != nil {
		return ph, err
	}

	cfg.phase("%s files: writes with an fsync of each file every %d, for %v", label, cfg.FsyncEvery, cfg.Duration)
	var w window
	var writes, fsyncs atomic.Int64
	var lat []time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(size)))
		buf := pattern(cfg.BS, cfg.Seed+7)
		blocks := size / int64(cfg.BS)
		for !w.done() {
			for range cfg.FsyncEvery {
				f := files[rng.IntN(len(files))]
				if err := f.WriteAt(buf, rng.Int64N(blocks)*int64(cfg.BS)); err != nil {
					w.fail(err)
					return
				}
				if w.open() {
					writes.Add(1)
				}
			}
			for _, f := range files {
				t0 := time.Now()
				if err := f.Fsync(); err != nil {
					w.fail(err)
					return
				}
				if w.open() {
					lat = append(lat, time.Since(t0))
					fsyncs.Add(1)
					w.count()
				}
			}
		}
	}()
	var tick func(time.Duration)
	if cfg.Progress != nil {
		tick = func(el time.Duration) {
			cfg.Progress(Progress{Workload: "csum-fsync", Case: label + " files", Elapsed: el, Duration: cfg.Duration,
				Ops: writes.Load() + fsyncs.Load(), Window: cfg.window, Windows: cfg.windows})
		}
	}
	elapsed := w.run(cfg.Warmup, cfg.Duration, tick)
	<-done
	if err := w.failure(); err != nil {
		return ph, err
	}
	after, err := counters(ctx, t)
	if err != nil {
		return ph, err
	}
	ph.Seconds = elapsed.Seconds()
	ph.Writes, ph.Fsyncs = writes.Load(), fsyncs.Load()
	ph.RequestsPerSec = float64(ph.Writes+ph.Fsyncs) / ph.Seconds
	ph.WritesPerSec = float64(ph.Writes) / ph.Seconds
	ph.Fsync = Summarize(lat)
	ph.Counters = after.Sub(before)
	return ph, nil
}
