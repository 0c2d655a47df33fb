package fsyncbench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The committed-check modes (CommittedConfig.RW).
const (
	// RWMixed: half the ops are 4 KiB overwrites, half reads, at random
	// blocks (fio's randrw with rwmixread=50).
	RWMixed = "randrw"
	// RWWrite: overwrites only.
	RWWrite = "randwrite"
	// RWRead: reads only.
	RWRead = "randread"
	// RWFsync: every op is an fsync of the file, clean and committed after
	// the setup: the "is its transaction committed?" check alone, the
	// path the jbd2 lesson is about.
	RWFsync = "fsync"
)

// CommittedModes lists the modes.
var CommittedModes = []string{RWMixed, RWWrite, RWRead, RWFsync}

// CommittedConfig configures committed-check. Zero values mean the
// defaults, the jbd2 patch's fio job (10 jobs × iodepth 10 on one file).
type CommittedConfig struct {
	Clients  int           // connections, each with its own view of the file (default 10)
	Depth    int           // ops each client keeps in flight (default 10)
	RW       string        // one of CommittedModes (default RWMixed)
	FileSize int64         // the shared file (default 512 MiB, as the patch's fio job)
	BS       int           // bytes per op (default 4096)
	Duration time.Duration // the measured window (default 10 s)
	Warmup   time.Duration // untimed, before the window (default 1 s)
	// Label names the server configuration in the result ("lock-free",
	// "locked").
	Label string
	Options
}

func (c CommittedConfig) withDefaults() CommittedConfig {
	if c.Clients == 0 {
		c.Clients = 10
	}
	if c.Depth == 0 {
		c.Depth = 10
	}
	if c.RW == "" {
		c.RW = RWMixed
	}
	if c.FileSize == 0 {
		c.FileSize = 512 << 20
	}
	if c.BS == 0 {
		c.BS = 4096
	}
	if c.Duration == 0 {
		c.Duration = 10 * time.Second
	}
	if c.Warmup == 0 {
		c.Warmup = min(c.Duration/10, time.Second)
	}
	return c
}

// Validate checks the configuration (after its defaults).
func (c CommittedConfig) Validate() error {
	c = c.withDefaults()
	if c.Clients < 1 || c.Depth < 1 || c.Clients*c.Depth > jobsMax*16 {
		return fmt.Errorf("clients %d × depth %d: want each at least 1, at most %d in all", c.Clients, c.Depth, jobsMax*16)
	}
	if !slices.Contains(CommittedModes, c.RW) {
		return fmt.Errorf("rw %q: want one of %v", c.RW, CommittedModes)
	}
	if c.BS < 1 || c.BS > ioBytesMax || c.FileSize < int64(c.BS) {
		return fmt.Errorf("bs %d, file size %d: want 1 ≤ bs ≤ %d and bs ≤ file size", c.BS, c.FileSize, ioBytesMax)
	}
	if c.Duration < 0 || c.Warmup < 0 {
		return errors.New("duration and warm-up must not be negative")
	}
	return nil
}

// CommittedResult is committed-check's figures on one server.
type CommittedResult struct {
	Workload  string   `json:"workload"` // "committed-check"
	Target    string   `json:"target"`
	Label     string   `json:"label,omitempty"`
	RW        string   `json:"rw"`
	Clients   int      `json:"clients"`
	Depth     int      `json:"depth"`
	FileSize  int64    `json:"file_size"`
	BS        int      `json:"bs"`
	Seconds   float64  `json:"seconds"`
	Ops       int64    `json:"ops"` // completed in the window
	Writes    int64    `json:"writes"`
	Reads     int64    `json:"reads"`
	Fsyncs    int64    `json:"fsyncs"`
	OpsPerSec float64  `json:"ops_per_sec"`
	MBps      float64  `json:"mb_per_s"` // of the writes and reads, 10^6 bytes
	Latency   Latency  `json:"latency"`
	Counters  Counters `json:"counters,omitempty"`
}

// committedWorker is one op in flight: its samples and counts.
type committedWorker struct {
	lat                   []time.Duration
	writes, reads, fsyncs atomic.Int64
}

// CommittedCheck runs committed-check on t: Clients connections, each with
// Depth ops in flight on one shared file, for the window.
func CommittedCheck(ctx context.Context, t Target, cfg CommittedConfig) (res CommittedResult, err error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	res = CommittedResult{Workload: "committed-check", Target: t.Name(), Label: cfg.Label, RW: cfg.RW,
		Clients: cfg.Clients, Depth: cfg.Depth, FileSize: cfg.FileSize, BS: cfg.BS}
	setup, err := t.Connect(ctx)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, setup.Close()) }()
	dir := runDir("committed-check")
	if err := setup.Mkdir(dir); err != nil {
		return res, err
	}
	name := dir + "/testfile"
	cfg.phase("laying out %s (%d bytes)", name, cfg.FileSize)
	if err := layOut(setup, name, cfg.FileSize, cfg.Seed); err != nil {
		return res, err
	}
	// Committed: the fsync mode then asks only "is it committed?".
	if err := setup.Sync(); err != nil {
		return res, err
	}
	if !cfg.Keep {
		defer func() {
			if err == nil {
				err = removeAll(setup, dir, []string{"testfile"})
			}
		}()
	}
	files := make([]File, cfg.Clients)
	for i := range files {
		c, err := t.Connect(ctx)
		if err != nil {
			return res, err
		}
		defer func() { err = errors.Join(err, c.Close()) }()
		if files[i], err = c.Open(name); err != nil {
			return res, err
		}
		defer func() { err = errors.Join(err, files[i].Close()) }()
	}
	before, err := counters(ctx, t)
	if err != nil {
		return res, err
	}

	cfg.phase("%s: %d clients × %d in flight for %v", cfg.RW, cfg.Clients, cfg.Depth, cfg.Duration)
	var w window
	var wg sync.WaitGroup
	ws := make([]*committedWorker, cfg.Clients*cfg.Depth)
	blocks := cfg.FileSize / int64(cfg.BS)
	for i := range ws {
		cw := &committedWorker{}
		ws[i] = cw
		f := files[i/cfg.Depth]
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(cfg.Seed, uint64(i)))
			data := pattern(cfg.BS, cfg.Seed^uint64(i+1))
			buf := make([]byte, cfg.BS)
			for !w.done() {
				off := rng.Int64N(blocks) * int64(cfg.BS)
				op := cfg.RW
				if op == RWMixed {
					op = RWRead
					if rng.IntN(2) == 0 {
						op = RWWrite
					}
				}
				t0 := time.Now()
				var err error
				switch op {
				case RWWrite:
					err = f.WriteAt(data, off)
				case RWRead:
					err = f.ReadAt(buf, off)
				default:
					err = f.Fsync()
				}
				if err != nil {
					w.fail(err)
					return
				}
				if !w.open() {
					continue
				}
				cw.lat = append(cw.lat, time.Since(t0))
				switch op {
				case RWWrite:
					cw.writes.Add(1)
				case RWRead:
					cw.reads.Add(1)
				default:
					cw.fsyncs.Add(1)
				}
				w.count()
			}
		})
	}
	total := func() (wr, rd, fs int64) {
		for _, cw := range ws {
			wr += cw.writes.Load()
			rd += cw.reads.Load()
			fs += cw.fsyncs.Load()
		}
		return
	}
	var tick func(time.Duration)
	if cfg.Progress != nil {
		tick = func(el time.Duration) {
			wr, rd, fs := total()
			window, windows := cfg.at(0, 1)
			cfg.Progress(Progress{Workload: res.Workload, Case: cfg.Label + " " + cfg.RW, Elapsed: el, Duration: cfg.Duration,
				Ops: wr + rd + fs, Window: window, Windows: windows})
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
	for _, cw := range ws {
		all = append(all, cw.lat...)
	}
	res.Writes, res.Reads, res.Fsyncs = total()
	res.Ops = res.Writes + res.Reads + res.Fsyncs
	res.Seconds = elapsed.Seconds()
	res.OpsPerSec = float64(res.Ops) / res.Seconds
	res.MBps = float64((res.Writes+res.Reads)*int64(cfg.BS)) / res.Seconds / 1e6
	res.Latency = Summarize(all)
	res.Counters = after.Sub(before)
	return res, nil
}
