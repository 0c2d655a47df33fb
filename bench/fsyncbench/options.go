package fsyncbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"time"
)

// Options are what every workload takes besides its own configuration.
type Options struct {
	// Seed seeds the offsets and the data.
	Seed uint64
	// Keep leaves the workload's directory on the target; by default its
	// files are removed at the end (on a scratch filesystem about to be
	// thrown away, keeping saves the time of a million unlinks).
	Keep bool
	// Phase, if set, is told each step ("laying out 8 files of 32 MiB").
	Phase func(string)
	// Progress, if set, is called about five times a second while a
	// window is open.
	Progress func(Progress)
	// window and windows place the next timed window among the run's
	// (Progress.Window, Progress.Windows); see InWindow.
	window, windows int
}

// InWindow returns o for a run of a workload that is timed window n
// (1-based) of count: Progress then says "n of count". A workload that
// runs several windows itself (one per job count, per phase) numbers
// them within the range, from n on; a caller that runs a workload several
// times (each mode, each repetition) counts them all in count.
func (o Options) InWindow(n, count int) Options {
	o.window, o.windows = n, count
	return o
}

// at is the Window and Windows of the workload's own window i (0-based)
// of its n, within the range InWindow set (by default, 1 of 1 run).
func (o Options) at(i, n int) (window, windows int) {
	if o.windows == 0 {
		return i + 1, n
	}
	return o.window + i, o.windows
}

// Progress is where a measured window is.
type Progress struct {
	Workload string
	Case     string // "8 jobs", "large files", …
	Elapsed  time.Duration
	Duration time.Duration
	Ops      int64 // completed in the window so far
	// Window and Windows place this window among the run's timed windows
	// (1-based): "[Window/Windows]" and, with Duration, the time left.
	Window, Windows int
	// OpsTotal is the ops a window that is a count, not a time, will do
	// (Duration 0): the time left is then at the rate so far.
	OpsTotal int64
}

func (o Options) phase(format string, args ...any) {
	if o.Phase != nil {
		o.Phase(fmt.Sprintf(format, args...))
	}
}

// runDir names a workload's fresh directory under the target's root.
func runDir(workload string) string {
	return fmt.Sprintf("%s-%d-%d", workload, os.Getpid(), time.Now().UnixNano())
}

// layOutBytes is the size of each write that lays a file out.
const layOutBytes = 1 << 20

// layOut creates name and writes size bytes into it, sequentially, then
// fsyncs it — as fio lays out a job's file before the job starts — so that
// the measured writes overwrite allocated blocks.
func layOut(c Conn, name string, size int64, seed uint64) error {
	f, err := c.Create(name)
	if err != nil {
		return err
	}
	buf := pattern(layOutBytes, seed)
	for off := int64(0); off < size; off += layOutBytes {
		if err := f.WriteAt(buf[:min(layOutBytes, size-off)], off); err != nil {
			f.Close()
			return fmt.Errorf("lay out %s: %w", name, err)
		}
	}
	if err := f.Fsync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// pattern is n pseudo-random bytes: nothing a filesystem could compress.
func pattern(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for k := range 8 {
			b[i+k] = byte(v >> (8 * k))
		}
	}
	return b
}

// counters reads t's counters, nil (and no error) for a target without
// any. A failed scrape is returned: a run that was asked for the server's
// counters and cannot read them says so.
func counters(ctx context.Context, t Target) (Counters, error) {
	c, err := t.Counters(ctx)
	if err != nil {
		return nil, fmt.Errorf("fsyncbench: counters of %s: %w", t.Name(), err)
	}
	return c, nil
}

// removeAll unlinks the files named and removes dir, for a workload that
// is not asked to keep them.
func removeAll(c Conn, dir string, files []string) error {
	for _, f := range files {
		if err := c.Unlink(dir + "/" + f); err != nil {
			return fmt.Errorf("fsyncbench: clean up %s/%s: %w", dir, f, err)
		}
	}
	return c.Rmdir(dir)
}
