package main

// What the `ustore bench fsync-*` commands share: the target (a running
// server, or a kernel filesystem's directory), its counters, progress, and
// printing the report.

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"ustore/bench/fsyncbench"
)

// fsyncTargetHelp is the target paragraph of each command's --help.
const fsyncTargetHelp = `The target is a running ustore server (--socket; by default $` + socketEnv + `,
else ustore-data/ustore.sock), driven through the client, one connection per
job; or a directory on a kernel filesystem (--dir), driven through the system
calls (open, pwrite, pread, fsync, unlink, syncfs). Both run the same
workload code: bench/fsync-vs-peers.sh runs it on ustore and on ext4, xfs and
btrfs in one run. The workload makes a directory of its own under the target
(--root on a server) and removes it at the end unless --keep.

With --metrics (the server's 'ustore serve --metrics-addr'), the server's
counters are read before and after: the fsync outcomes (already committed,
committed, logged, fallbacks), commits, log syncs and their batch sizes; the
report shows what moved.`

// fsyncFlags are the flags every fsync workload takes.
type fsyncFlags struct {
	socket, dir, root, metrics, label, progress string
	asJSON, keep                                bool
	seed                                        uint64
	writeBehind                                 int
}

func (f *fsyncFlags) add(c *cobra.Command) {
	fs := c.Flags()
	fs.StringVar(&f.socket, "socket", defaultClientSocket(), "the running server's Unix socket")
	fs.StringVar(&f.dir, "dir", "", "run on this directory of a kernel filesystem instead of a server")
	fs.StringVar(&f.root, "root", "/", "on a server: the directory to work under")
	fs.StringVar(&f.metrics, "metrics", "", "on a server: its metrics endpoint (serve's --metrics-addr, such as 127.0.0.1:9464), for its counters")
	fs.StringVar(&f.label, "label", "", "a name for the target in the report (such as ext4, btrfs-16k)")
	fs.BoolVar(&f.keep, "keep", false, "leave the workload's files on the target")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the offsets and the data")
	fs.IntVar(&f.writeBehind, "write-behind", 0, "on a server: writes each file keeps in flight (the client's write-behind: a write returns once sent, the file's fsync waits for the replies); 0: each write waits for its reply")
	fs.BoolVar(&f.asJSON, "json", false, "print the report as JSON")
	fs.StringVar(&f.progress, "progress", "auto", "show progress on stderr: auto (when a terminal), always, never")
}

// target is the target the flags name.
func (f *fsyncFlags) target(cmd *cobra.Command) (fsyncbench.Target, error) {
	if f.dir != "" {
		if cmd.Flags().Changed("socket") || f.metrics != "" || cmd.Flags().Changed("root") || f.writeBehind != 0 {
			return nil, usageError{fmt.Errorf("--dir runs on a kernel filesystem: --socket, --metrics, --root and --write-behind are for a server")}
		}
		d, err := fsyncbench.NewDir(f.dir)
		if err != nil {
			return nil, usageError{fmt.Errorf("--dir: %w", err)}
		}
		return d, nil
	}
	if f.writeBehind < 0 {
		return nil, usageError{fmt.Errorf("--write-behind %d: want 0 or more", f.writeBehind)}
	}
	return fsyncbench.NewUstore(f.socket, fsyncbench.UstoreOptions{Root: f.root, Metrics: f.metrics, WriteBehind: f.writeBehind}), nil
}

// options are the workload's common options: seed, keep, and progress on
// stderr.
func (f *fsyncFlags) options(cmd *cobra.Command) fsyncbench.Options {
	o := fsyncbench.Options{Seed: f.seed, Keep: f.keep}
	stderr := cmd.ErrOrStderr()
	if showProgress(f.progress, stderr) {
		o.Phase = func(s string) { fmt.Fprintf(stderr, "\r\033[K%s\n", s) }
		o.Progress = func(p fsyncbench.Progress) { fmt.Fprintf(stderr, "\r\033[K%s", fsyncProgressLine(p)) }
	}
	return o
}

// fsyncProgressLine is the progress line of an fsync workload's window:
// by time, or a count (dir-fsync's creates).
func fsyncProgressLine(p fsyncbench.Progress) string {
	rate := 0.0
	if p.Elapsed > 0 {
		rate = float64(p.Ops) / p.Elapsed.Seconds()
	}
	if p.Duration == 0 {
		return benchCountStep(p.Window, p.Windows, p.Ops, p.OpsTotal, p.Elapsed,
			fmt.Sprintf("%s %s: %d/%d %9.0f ops/s", p.Workload, p.Case, p.Ops, p.OpsTotal, rate))
	}
	return benchStep(p.Window, p.Windows, p.Elapsed, p.Duration,
		fmt.Sprintf("%s %s: %4.1fs/%.1fs %9.0f ops/s", p.Workload, p.Case, p.Elapsed.Seconds(), p.Duration.Seconds(), rate))
}

// context ends at SIGINT or SIGTERM.
func (f *fsyncFlags) context(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

// print writes the report — what finished, even after a failure.
func (f *fsyncFlags) print(cmd *cobra.Command, rep *fsyncbench.Report) error {
	if showProgress(f.progress, cmd.ErrOrStderr()) {
		fmt.Fprint(cmd.ErrOrStderr(), "\r\033[K")
	}
	return writeResults(cmd.OutOrStdout(), f.asJSON, rep, func(w io.Writer) { fsyncbench.WriteText(w, rep) })
}

// fsyncRun is one fsync workload's run, for fsyncFlags.run.
type fsyncRun struct {
	workload string       // its name, in the report and in a usage error
	validate func() error // checks the workload's configuration
	// work runs the workload on t until ctx ends, and returns its results
	// and whether to print them: what finished, even after a failure.
	work func(ctx context.Context, t fsyncbench.Target) (results any, print bool, err error)
	// targetNote is appended to the report's target (a second server).
	targetNote string
}

// run is every fsync workload's run: the configuration checked (a usage
// error), the target opened, the workload run until SIGINT or SIGTERM,
// and its report printed.
func (f *fsyncFlags) run(cmd *cobra.Command, r fsyncRun) error {
	if err := r.validate(); err != nil {
		return usageError{fmt.Errorf("%s: %w", r.workload, err)}
	}
	t, err := f.target(cmd)
	if err != nil {
		return err
	}
	ctx, stop := f.context(cmd)
	defer stop()
	results, print, runErr := r.work(ctx, t)
	if print {
		rep := fsyncbench.NewReport(r.workload, t, f.label)
		rep.Target += r.targetNote
		rep.Results = results
		if err := f.print(cmd, rep); err != nil {
			return err
		}
	}
	return runErr
}

// positive checks that a duration flag is more than zero.
func positive(name string, d time.Duration) error {
	if d <= 0 {
		return usageError{fmt.Errorf("--%s %v: want more than 0", name, d)}
	}
	return nil
}
