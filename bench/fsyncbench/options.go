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
}

// Progress is where a measured window is.
type Progress struct {
	Workload string
	Case     string // "8 jobs", "large files", …
	Elapsed  time.Duration
	Duration time.Duration
	Ops      int64 // completed in the window so far
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
