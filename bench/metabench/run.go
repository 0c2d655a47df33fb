package metabench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"ustore/bench/servicebench"
)

// The ops, in the order each client count runs them.
const (
	OpCreate  = "create"
	OpStat    = "stat"
	OpRename  = "rename"
	OpUnlink  = "unlink"
	OpMkdir   = "mkdir"
	OpRmdir   = "rmdir"
	OpReadDir = "readdir"
	OpDelete  = "delete" // an unlink in the big directory
)

// Ops are the ops in the order each client count runs them.
var Ops = []string{OpCreate, OpStat, OpRename, OpUnlink, OpMkdir, OpRmdir, OpReadDir, OpDelete}

// Config configures a run. Zero values mean the defaults.
type Config struct {
	Clients []int // client counts, one pass each (default 1, 8, 64)
	// Files is the creates (and the stats, renames, unlinks, mkdirs and
	// rmdirs) of each client count, split among its clients (default
	// 10,000).
	Files int
	// BigDir is the entries of the big directory that readdir reads and
	// the deletes are made in (default 100,000; 1,000,000 is the issue's
	// size, and takes minutes to fill and empty).
	BigDir int
	// Deletes is the unlinks in the big directory at each client count,
	// spread through it (default 1000).
	Deletes int
	// Echo, if set, is the echo reference, and EchoRoundTrips how many
	// round trips of each op's frame sizes it is timed for (default
	// 2000).
	Echo           *servicebench.EchoProcess
	EchoRoundTrips int
	// Keep leaves the big directory on the target.
	Keep bool
	// Phase, if set, is told each step.
	Phase func(string)
	// Progress, if set, is told each timed phase as it ends.
	Progress func(Progress)
}

// Progress is a timed phase that ended: the Step-th of Steps.
type Progress struct {
	Step, Steps int
	Result      OpResult
}

// Limits of the configuration: a run must fit the machine's time and the
// target's directories.
const (
	clientsMax = 1024
	filesMax   = 10_000_000
)

func (c Config) withDefaults() Config {
	if len(c.Clients) == 0 {
		c.Clients = []int{1, 8, 64}
	}
	if c.Files == 0 {
		c.Files = 10_000
	}
	if c.BigDir == 0 {
		c.BigDir = 100_000
	}
	if c.Deletes == 0 {
		c.Deletes = 1000
	}
	if c.EchoRoundTrips == 0 {
		c.EchoRoundTrips = 2000
	}
	return c
}

// Validate checks the configuration (after its defaults).
func (c Config) Validate() error {
	c = c.withDefaults()
	for _, n := range c.Clients {
		if n < 1 || n > clientsMax {
			return fmt.Errorf("clients %d: want 1 to %d", n, clientsMax)
		}
	}
	if c.Files < 1 || c.Files > filesMax {
		return fmt.Errorf("files %d: want 1 to %d", c.Files, filesMax)
	}
	if c.BigDir < 1 || c.BigDir > filesMax {
		return fmt.Errorf("big-dir %d: want 1 to %d", c.BigDir, filesMax)
	}
	if c.Deletes < 1 || c.Deletes*len(c.Clients) > c.BigDir {
		return fmt.Errorf("deletes %d: want 1 to big-dir / the client counts (%d)", c.Deletes, c.BigDir/len(c.Clients))
	}
	if c.EchoRoundTrips < 1 {
		return fmt.Errorf("echo round trips %d: want at least 1", c.EchoRoundTrips)
	}
	return nil
}

func (c Config) phase(format string, args ...any) {
	if c.Phase != nil {
		c.Phase(fmt.Sprintf(format, args...))
	}
}

// The names: client k's i-th file, its new name, its directory; the big
// directory's i-th file. Fixed width, so that every op's frame has the
// size frameSizes measures.
func fileName(k, i int) string { return fmt.Sprintf("f%04d-%08d", k, i) }
func renamed(k, i int) string  { return fmt.Sprintf("r%04d-%08d", k, i) }
func dirName(k, i int) string  { return fmt.Sprintf("d%04d-%08d", k, i) }
func bigName(i int) string     { return fmt.Sprintf("b%013d", i) }

// run is one run's state.
type run struct {
	cfg   Config
	ctx   context.Context
	t     Target
	conns []Conn // enough for the largest client count
	rep   *Report
	step  int
	steps int
}

// Run runs the workload on t and returns its report; after a failure,
// the report holds what finished.
func Run(ctx context.Context, t Target, cfg Config) (rep *Report, err error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rep = &Report{Target: t.Name(), Clients: cfg.Clients, Files: cfg.Files, BigDir: cfg.BigDir, Deletes: cfg.Deletes}
	r := &run{cfg: cfg, ctx: ctx, t: t, rep: rep, steps: len(cfg.Clients) * len(Ops)}
	defer func() {
		for _, c := range r.conns {
			err = errors.Join(err, c.Close())
		}
	}()
	most := 0
	for _, n := range cfg.Clients {
		most = max(most, n)
	}
	for range most {
		c, err := t.Connect(ctx)
		if err != nil {
			return rep, err
		}
		r.conns = append(r.conns, c)
	}
	if cfg.Echo != nil {
		if err := r.echo(); err != nil {
			return rep, err
		}
	}
	root := fmt.Sprintf("ustore-bench-meta-%d-%d", os.Getpid(), time.Now().UnixNano())
	if err := r.conns[0].Mkdir(root); err != nil {
		return rep, err
	}
	big := root + "/big"
	if err := r.fillBig(big); err != nil {
		return rep, err
	}
	for j, n := range cfg.Clients {
		if err := r.pass(root, big, j, n); err != nil {
			return rep, err
		}
	}
	if cfg.Keep {
		return rep, nil
	}
	if err := r.emptyBig(big); err != nil {
		return rep, err
	}
	if err := r.conns[0].Rmdir(big); err != nil {
		return rep, err
	}
	return rep, r.conns[0].Rmdir(root)
}

// echo times the echo reference with each op's frame sizes.
func (r *run) echo() error {
	sizes, err := frameSizes()
	if err != nil {
		return err
	}
	r.cfg.phase("timing the echo reference (pid %d), %d round trips per op", r.cfg.Echo.PID(), r.cfg.EchoRoundTrips)
	r.rep.Echo = map[string]float64{}
	r.rep.EchoNote = fmt.Sprintf("echo: a process of its own (pid %d), depth 1, median of %d round trips",
		r.cfg.Echo.PID(), r.cfg.EchoRoundTrips)
	for op, sz := range sizes {
		p50, err := r.cfg.Echo.RoundTripP50(sz[0], sz[1], r.cfg.EchoRoundTrips)
		if err != nil {
			return fmt.Errorf("metabench: echo: %w", err)
		}
		r.rep.Echo[op] = float64(p50) / 1e3
	}
	return nil
}

// share is how many of total ops client k of n makes: total split as
// evenly as it goes, every op made once.
func share(total, k, n int) int {
	s := total / n
	if k < total%n {
		s++
	}
	return s
}

// parallel runs fn(k) on n clients' goroutines at once and returns the
// wall time and the first error.
func (r *run) parallel(n int, fn func(k int, c Conn) error) (time.Duration, error) {
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for k := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[k] = fn(k, r.conns[k])
		}()
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	return time.Since(t0), errors.Join(errs...)
}

// timed runs op on n clients, each making its share of count ops
// (do(k, c, i) the i-th of client k), and records the result.
func (r *run) timed(op string, n, count int, do func(k int, c Conn, i int) error) error {
	samples := make([][]time.Duration, n)
	wall, err := r.parallel(n, func(k int, c Conn) error {
		m := share(count, k, n)
		s := make([]time.Duration, 0, m)
		defer func() { samples[k] = s }()
		for i := range m {
			t0 := time.Now()
			if err := do(k, c, i); err != nil {
				return fmt.Errorf("metabench: %s by client %d: %w", op, k, err)
			}
			s = append(s, time.Since(t0))
		}
		return nil
	})
	if err != nil {
		return err
	}
	var all []time.Duration
	for _, s := range samples {
		all = append(all, s...)
	}
	res := OpResult{Op: op, Clients: n, Ops: int64(len(all)), Seconds: wall.Seconds(), Latency: summarize(all)}
	if wall > 0 {
		res.OpsPerSec = float64(len(all)) / wall.Seconds()
	}
	if e, ok := r.rep.Echo[op]; ok && n == 1 && e > 0 {
		res.EchoP50US = e
		res.OverEcho = res.P50US / e
	}
	r.rep.Results = append(r.rep.Results, res)
	r.step++
	if r.cfg.Progress != nil {
		r.cfg.Progress(Progress{Step: r.step, Steps: r.steps, Result: res})
	}
	return nil
}

// pass is client count n's (the j-th count's) ops: each in a directory of
// its own, then readdir and deletes in the big directory.
func (r *run) pass(root, big string, j, n int) error {
	dir := root + "/c" + strconv.Itoa(n)
	r.cfg.phase("%d clients, in %s", n, dir)
	if err := r.conns[0].Mkdir(dir); err != nil {
		return err
	}
	files := r.cfg.Files
	counts := &r.rep.Counts
	var mu sync.Mutex
	count := func(p *int64) {
		mu.Lock()
		*p++
		mu.Unlock()
	}
	steps := []struct {
		op string
		do func(k int, c Conn, i int) error
		n  *int64
	}{
		{OpCreate, func(k int, c Conn, i int) error { return c.Create(dir + "/" + fileName(k, i)) }, &counts.Created},
		{OpStat, func(k int, c Conn, i int) error { return c.Stat(dir + "/" + fileName(k, i)) }, &counts.Stated},
		{OpRename, func(k int, c Conn, i int) error {
			return c.Rename(dir+"/"+fileName(k, i), dir+"/"+renamed(k, i))
		}, &counts.Renamed},
		{OpUnlink, func(k int, c Conn, i int) error { return c.Unlink(dir + "/" + renamed(k, i)) }, &counts.Unlinked},
		{OpMkdir, func(k int, c Conn, i int) error { return c.Mkdir(dir + "/" + dirName(k, i)) }, &counts.Mkdirs},
		{OpRmdir, func(k int, c Conn, i int) error { return c.Rmdir(dir + "/" + dirName(k, i)) }, &counts.Rmdirs},
	}
	for _, s := range steps {
		do := s.do
		if err := r.timed(s.op, n, files, func(k int, c Conn, i int) error {
			if err := do(k, c, i); err != nil {
				return err
			}
			count(s.n)
			return nil
		}); err != nil {
			return err
		}
	}
	left, err := r.conns[0].ReadDir(dir)
	if err != nil {
		return err
	}
	counts.Left += int64(left)
	if left != 0 {
		return fmt.Errorf("metabench: %d entries left in %s after the unlinks and rmdirs", left, dir)
	}
	if err := r.conns[0].Rmdir(dir); err != nil {
		return err
	}

	// Readdir: each client reads the whole big directory once.
	want := r.cfg.BigDir - j*r.cfg.Deletes
	err = r.timed(OpReadDir, n, n, func(k int, c Conn, i int) error {
		got, err := c.ReadDir(big)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("readdir of %s: %d entries, want %d", big, got, want)
		}
		mu.Lock()
		counts.ReadDirEntries += int64(got)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return err
	}
	// Deletes: the victims of count j, every len(Clients)-th of those
	// spread through the directory, so that each count's are spread too.
	stride := r.cfg.BigDir / (r.cfg.Deletes * len(r.cfg.Clients))
	victims := r.victims(j, stride)
	var next int
	return r.timed(OpDelete, n, r.cfg.Deletes, func(k int, c Conn, _ int) error {
		mu.Lock()
		v := victims[next]
		next++
		mu.Unlock()
		if err := c.Unlink(big + "/" + bigName(v)); err != nil {
			return err
		}
		count(&counts.Deleted)
		return nil
	})
}

// victims are count j's deletes: the indices i·stride of the big
// directory with i ≡ j mod the number of counts.
func (r *run) victims(j, stride int) []int {
	vs := make([]int, 0, r.cfg.Deletes)
	for m := range r.cfg.Deletes {
		vs = append(vs, (m*len(r.cfg.Clients)+j)*stride)
	}
	return vs
}

// deleted reports whether the deletes removed big-directory entry i.
func (r *run) deleted(i int) bool {
	stride := r.cfg.BigDir / (r.cfg.Deletes * len(r.cfg.Clients))
	return i%stride == 0 && i/stride < r.cfg.Deletes*len(r.cfg.Clients)
}

// fillBig makes the big directory and its BigDir files, untimed, on
// every connection at once.
func (r *run) fillBig(big string) error {
	if err := r.conns[0].Mkdir(big); err != nil {
		return err
	}
	r.cfg.phase("filling %s with %d files on %d connections", big, r.cfg.BigDir, len(r.conns))
	n := len(r.conns)
	_, err := r.parallel(n, func(k int, c Conn) error {
		for i := k; i < r.cfg.BigDir; i += n {
			if err := c.Create(big + "/" + bigName(i)); err != nil {
				return err
			}
		}
		return nil
	})
	return err
}

// emptyBig unlinks what the deletes left in the big directory, untimed,
// and checks that it is then empty.
func (r *run) emptyBig(big string) error {
	r.cfg.phase("emptying %s", big)
	n := len(r.conns)
	_, err := r.parallel(n, func(k int, c Conn) error {
		for i := k; i < r.cfg.BigDir; i += n {
			if !r.deleted(i) {
				if err := c.Unlink(big + "/" + bigName(i)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	left, err := r.conns[0].ReadDir(big)
	r.rep.Counts.Left += int64(left)
	if err == nil && left != 0 {
		err = fmt.Errorf("metabench: %d entries left in %s", left, big)
	}
	return err
}
