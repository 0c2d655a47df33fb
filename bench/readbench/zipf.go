package readbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"ustore/client"
)

// ZipfConfig configures the zipf workload.
type ZipfConfig struct {
	Dir       string  // the data set's directory on the server, made if missing
	Files     int     // files of the data set
	DataBytes int64   // the data set, over all files (a multiple of Files × 4 KiB)
	Workers   int     // goroutines, each one op at a time
	WriteFrac float64 // share of ops that are 4 KiB overwrites (0: reads only)
	S         float64 // Zipf exponent (> 1): rank k is drawn ∝ 1/(1+k)^S
	Duration  time.Duration
	Interval  time.Duration // between samples
	Metrics   string        // the server's --metrics-addr
	Seed      uint64
}

// Validate says what is wrong with cfg.
func (cfg *ZipfConfig) Validate() error {
	switch {
	case cfg.Files < 1 || cfg.Workers < 1:
		return fmt.Errorf("readbench: %d files, %d workers: want at least 1 of each", cfg.Files, cfg.Workers)
	case cfg.DataBytes < int64(cfg.Files)*blockSize || cfg.DataBytes%(int64(cfg.Files)*blockSize) != 0:
		return fmt.Errorf("readbench: data set %d bytes: want a multiple of %d files × %d", cfg.DataBytes, cfg.Files, blockSize)
	case cfg.S <= 1:
		return fmt.Errorf("readbench: Zipf exponent %g: want above 1", cfg.S)
	case cfg.WriteFrac < 0 || cfg.WriteFrac > 1:
		return fmt.Errorf("readbench: write share %g: want 0 to 1", cfg.WriteFrac)
	case cfg.Duration <= 0 || cfg.Interval <= 0:
		return fmt.Errorf("readbench: duration %v, interval %v: want both positive", cfg.Duration, cfg.Interval)
	}
	return nil
}

// ZipfResult sums a zipf run up.
type ZipfResult struct {
	Reads, Writes uint64
	Seconds       float64
	// HitRatio is the page cache's over the whole run, HitRatioLast over
	// its last interval; RSSMaxBytes the largest RSS sampled, and
	// BudgetBytes the cache's budget.
	HitRatio, HitRatioLast   float64
	RSSMaxBytes, BudgetBytes int64
	Samples                  int
}

// zipfPerm is an odd multiplier that spreads ranks over the blocks (a
// permutation of [0, n) for any n it does not divide: it is prime), so
// that hot blocks are scattered over the files rather than at the front
// of the first, where read-ahead would fetch them together.
const zipfPerm = 2654435761

// LayOutZipf makes cfg's files (LayOut each), reporting how many it wrote.
func LayOutZipf(ctx context.Context, c *client.Client, cfg ZipfConfig) (int, error) {
	if _, err := c.Resolve(ctx, cfg.Dir); errors.Is(err, fs.ErrNotExist) {
		parent, name := splitDir(cfg.Dir)
		p, err := c.Resolve(ctx, parent)
		if err != nil {
			return 0, fmt.Errorf("readbench: %s: %w", parent, err)
		}
		if _, err := c.Mkdir(ctx, p.Ino, name, 0o755); err != nil {
			return 0, fmt.Errorf("readbench: %s: %w", cfg.Dir, err)
		}
	} else if err != nil {
		return 0, fmt.Errorf("readbench: %s: %w", cfg.Dir, err)
	}
	wrote := 0
	for i := range cfg.Files {
		w, err := LayOut(ctx, c, zipfFile(cfg.Dir, i), cfg.DataBytes/int64(cfg.Files), cfg.Seed+uint64(i))
		if err != nil {
			return wrote, err
		}
		if w {
			wrote++
		}
	}
	return wrote, nil
}

func zipfFile(dir string, i int) string { return fmt.Sprintf("%s/f%04d", dir, i) }

func splitDir(p string) (parent, name string) {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			if i == 0 {
				return "/", p[1:]
			}
			return p[:i], p[i+1:]
		}
	}
	return "/", p
}

// Zipf runs the workload on cfg's files (laid out already) for
// cfg.Duration, writing a CSV row to csv every cfg.Interval.
func Zipf(ctx context.Context, c *client.Client, cfg ZipfConfig, csv io.Writer) (ZipfResult, error) {
	if err := cfg.Validate(); err != nil {
		return ZipfResult{}, err
	}
	if cfg.Metrics == "" {
		return ZipfResult{}, errors.New("readbench: the zipf workload samples the server's /metrics: give its endpoint")
	}
	inos := make([]uint64, cfg.Files)
	fileBlocks := uint64(cfg.DataBytes / int64(cfg.Files) / blockSize)
	for i := range inos {
		a, err := c.Resolve(ctx, zipfFile(cfg.Dir, i))
		if err != nil {
			return ZipfResult{}, fmt.Errorf("readbench: %w (lay the files out first)", err)
		}
		if a.Size != fileBlocks*blockSize {
			return ZipfResult{}, fmt.Errorf("readbench: %s is %d bytes, want %d", zipfFile(cfg.Dir, i), a.Size, fileBlocks*blockSize)
		}
		inos[i] = a.Ino
	}
	first, err := scrape(ctx, cfg.Metrics)
	if err != nil {
		return ZipfResult{}, err
	}
	if _, err := fmt.Fprintln(csv, csvHeader); err != nil {
		return ZipfResult{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var reads, writes atomic.Uint64
	var wg sync.WaitGroup
	errs := make(chan error, cfg.Workers)
	start := time.Now()
	deadline := start.Add(cfg.Duration)
	for w := range cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := zipfWorker(ctx, c, cfg, w, inos, fileBlocks, deadline, &reads, &writes); err != nil {
				errs <- err
				cancel()
			}
		}()
	}
	res := ZipfResult{BudgetBytes: int64(first[seriesBudget])}
	prev, prevReads, prevWrites := first, uint64(0), uint64(0)
	tick := time.NewTicker(cfg.Interval)
	defer tick.Stop()
	sample := func(now time.Time) error {
		cur, err := scrape(context.WithoutCancel(ctx), cfg.Metrics)
		if err != nil {
			return err
		}
		r, w := reads.Load(), writes.Load()
		s := Sample{Seconds: now.Sub(start).Seconds(), Reads: r - prevReads, Writes: w - prevWrites,
			HitRatio: ratio(prev, cur), HitRatioRun: ratio(first, cur),
			PageBytes: int64(cur[seriesPageBytes]), NodeBytes: int64(cur[seriesNodeBytes]),
			BudgetBytes: int64(cur[seriesBudget]), DirtyBytes: int64(cur[seriesDirty]), RSSBytes: int64(cur[seriesRSS])}
		if _, err := fmt.Fprintln(csv, s.csvRow()); err != nil {
			return err
		}
		prev, prevReads, prevWrites = cur, r, w
		res.Samples++
		res.HitRatioLast, res.HitRatio = s.HitRatio, s.HitRatioRun
		res.RSSMaxBytes = max(res.RSSMaxBytes, s.RSSBytes)
		return nil
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var runErr error
loop:
	for {
		select {
		case now := <-tick.C:
			if err := sample(now); err != nil {
				runErr = err
				cancel()
				<-done
				break loop
			}
		case <-done:
			break loop
		}
	}
	res.Seconds = time.Since(start).Seconds()
	res.Reads, res.Writes = reads.Load(), writes.Load()
	select {
	case err := <-errs:
		return res, err
	default:
	}
	return res, runErr
}

// zipfWorker runs one worker's ops until deadline: a Zipf rank, spread
// to a block, read and checked — or, for a WriteFrac share, overwritten
// with its stamp and the overwrite mark.
func zipfWorker(ctx context.Context, c *client.Client, cfg ZipfConfig, w int, inos []uint64, fileBlocks uint64,
	deadline time.Time, reads, writes *atomic.Uint64) error {
	n := uint64(len(inos)) * fileBlocks
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(w)+1))
	z := rand.NewZipf(rng, cfg.S, 1, n-1)
	buf := make([]byte, blockSize)
	for i := 0; ; i++ {
		if i%64 == 0 && !time.Now().Before(deadline) {
			return nil
		}
		b := z.Uint64() * zipfPerm % n
		ino, off := inos[b/fileBlocks], b%fileBlocks*blockSize
		if cfg.WriteFrac > 0 && rng.Float64() < cfg.WriteFrac {
			stamp(buf, off, overwriteMark)
			if _, err := c.Write(ctx, ino, off, buf); err != nil {
				return fmt.Errorf("readbench: write inode %d at %d: %w", ino, off, err)
			}
			writes.Add(1)
			continue
		}
		m, err := c.Read(ctx, ino, off, buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("readbench: read inode %d at %d: %w", ino, off, err)
		}
		if m != blockSize {
			return fmt.Errorf("readbench: read inode %d at %d: %d bytes, want %d", ino, off, m, blockSize)
		}
		if err := checkBlock(buf, off); err != nil {
			return fmt.Errorf("inode %d: %w", ino, err)
		}
		reads.Add(1)
	}
}
