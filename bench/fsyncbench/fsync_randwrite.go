package fsyncbench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// RandWriteConfig configures fsync-randwrite. Zero values mean the
// defaults, which are the fio job's.
type RandWriteConfig struct {
	Jobs       []int         // one run per job count, each in a fresh directory (default 8, 16)
	FileSize   int64         // each job's file (default 32 MiB)
	BS         int           // bytes per write (default 4096)
	FsyncEvery int           // writes between a job's fsyncs (default 4)
	Duration   time.Duration // the measured window (default 30 s)
	Warmup     time.Duration // untimed, before the window (default 0, as fio)
	Options
}

func (c RandWriteConfig) withDefaults() RandWriteConfig {
	if len(c.Jobs) == 0 {
		c.Jobs = []int{8, 16}
	}
	if c.FileSize == 0 {
		c.FileSize = 32 << 20
	}
	if c.BS == 0 {
		c.BS = 4096
	}
	if c.FsyncEvery == 0 {
		c.FsyncEvery = 4
	}
	if c.Duration == 0 {
		c.Duration = 30 * time.Second
	}
	return c
}

// Validate checks the configuration (after its defaults).
func (c RandWriteConfig) Validate() error {
	c = c.withDefaults()
	for _, j := range c.Jobs {
		if j < 1 || j > jobsMax {
			return fmt.Errorf("jobs %d: want 1 to %d", j, jobsMax)
		}
	}
	if c.BS < 1 || c.BS > ioBytesMax || c.FileSize < int64(c.BS) {
		return fmt.Errorf("bs %d, file size %d: want 1 ≤ bs ≤ %d and bs ≤ file size", c.BS, c.FileSize, ioBytesMax)
	}
	if c.FsyncEvery < 1 || c.Duration < 0 || c.Warmup < 0 {
		return errors.New("fsync-every must be at least 1, duration and warm-up not negative")
	}
	return nil
}

// RandWriteResult is one job count's figures.
type RandWriteResult struct {
	Workload   string  `json:"workload"` // "fsync-randwrite"
	Target     string  `json:"target"`
	Jobs       int     `json:"jobs"`
	FileSize   int64   `json:"file_size"`
	BS         int     `json:"bs"`
	FsyncEvery int     `json:"fsync_every"`
	Seconds    float64 `json:"seconds"` // the window
	Writes     int64   `json:"writes"`  // completed in the window
	Fsyncs     int64   `json:"fsyncs"`
	WriteIOPS  float64 `json:"write_iops"` // fio's write IOPS
	WriteKiBps float64 `json:"write_kib_per_s"`
	Fsync      Latency `json:"fsync"`
	// Counters is what moved on the server during the run (warm-up and
	// window), when it has counters.
	Counters Counters `json:"counters,omitempty"`
}

// RandWrite runs fsync-randwrite on t once per job count.
func RandWrite(ctx context.Context, t Target, cfg RandWriteConfig) ([]RandWriteResult, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var out []RandWriteResult
	for i, jobs := range cfg.Jobs {
		c := cfg
		c.window, c.windows = cfg.at(i, len(cfg.Jobs))
		r, err := randWrite(ctx, t, c, jobs)
		if err != nil {
			return out, fmt.Errorf("fsync-randwrite, %d jobs: %w", jobs, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// randWriteJob is one job: its connection, its file, its figures.
type randWriteJob struct {
	conn   Conn
	file   File
	writes atomic.Int64
	fsyncs []time.Duration // latencies of the fsyncs that completed in the window
}

func randWrite(ctx context.Context, t Target, cfg RandWriteConfig, jobs int) (res RandWriteResult, err error) {
	res = RandWriteResult{Workload: "fsync-randwrite", Target: t.Name(), Jobs: jobs, FileSize: cfg.FileSize,
		BS: cfg.BS, FsyncEvery: cfg.FsyncEvery}
	setup, err := t.Connect(ctx)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, setup.Close()) }()
	dir := runDir("fsync-randwrite")
	if err := setup.Mkdir(dir); err != nil {
		return res, err
	}
	names := make([]string, jobs)
	cfg.phase("laying out %d files of %d bytes in %s", jobs, cfg.FileSize, dir)
	for i := range jobs {
		names[i] = "job" + strconv.Itoa(i)
		if err := layOut(setup, dir+"/"+names[i], cfg.FileSize, cfg.Seed+uint64(i)); err != nil {
			return res, err
		}
	}
	if err := setup.Sync(); err != nil {
		return res, err
	}
	if !cfg.Keep {
		defer func() {
			if err == nil {
				err = removeAll(setup, dir, names)
			}
		}()
	}

	js := make([]*randWriteJob, jobs)
	defer func() {
		for _, j := range js {
			if j != nil {
				err = errors.Join(err, j.file.Close(), j.conn.Close())
			}
		}
	}()
	for i := range js {
		c, err := t.Connect(ctx)
		if err != nil {
			return res, err
		}
		f, err := c.Open(dir + "/" + names[i])
		if err != nil {
			c.Close()
			return res, err
		}
		js[i] = &randWriteJob{conn: c, file: f}
	}
	before, err := counters(ctx, t)
	if err != nil {
		return res, err
	}

	cfg.phase("running %d jobs for %v", jobs, cfg.Duration)
	var w window
	var wg sync.WaitGroup
	blocks := cfg.FileSize / int64(cfg.BS)
	for i, j := range js {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(cfg.Seed, uint64(jobs)<<32|uint64(i)))
			buf := pattern(cfg.BS, cfg.Seed^uint64(i+1))
			for !w.done() {
				for range cfg.FsyncEvery {
					if err := j.file.WriteAt(buf, rng.Int64N(blocks)*int64(cfg.BS)); err != nil {
						w.fail(err)
						return
					}
					if w.open() {
						j.writes.Add(1)
					}
				}
				t0 := time.Now()
				if err := j.file.Fsync(); err != nil {
					w.fail(err)
					return
				}
				if w.open() {
					j.fsyncs = append(j.fsyncs, time.Since(t0))
					w.count()
				}
			}
		})
	}
	var tick func(time.Duration)
	if cfg.Progress != nil {
		tick = func(el time.Duration) {
			var n int64
			for _, j := range js {
				n += j.writes.Load()
			}
			cfg.Progress(Progress{Workload: res.Workload, Case: fmt.Sprintf("%d jobs", jobs), Elapsed: el,
				Duration: cfg.Duration, Ops: n, Window: cfg.window, Windows: cfg.windows})
		}
	}
	elapsed := w.run(cfg.Warmup, cfg.Duration, tick)
	wg.Wait()
	if err := w.failure(); err != nil {
		return res, err
	}
	after, err := counters(ctx, t)
	if err != nil {
		return res, err
	}
	var all []time.Duration
	for _, j := range js {
		res.Writes += j.writes.Load()
		all = append(all, j.fsyncs...)
	}
	res.Seconds = elapsed.Seconds()
	res.Fsyncs = int64(len(all))
	res.WriteIOPS = float64(res.Writes) / res.Seconds
	res.WriteKiBps = res.WriteIOPS * float64(cfg.BS) / 1024
	res.Fsync = Summarize(all)
	res.Counters = after.Sub(before)
	return res, nil
}
