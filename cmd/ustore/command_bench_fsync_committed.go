package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"ustore/bench/fsyncbench"
)

func newBenchCommittedCheckCommand() *cobra.Command {
	var (
		f                fsyncFlags
		ablatedSocket    string
		ablatedMetrics   string
		clients, depth   int
		reps             int
		modes            []string
		fileSize, bs     string
		duration, warmup time.Duration
	)
	c := &cobra.Command{
		Use:   "committed-check",
		Short: "10 clients × 10 in flight on one file, lock-free vs locked Committed check (the 2024 jbd2 patch's fio job)",
		Long: `The fio job of the 2024 jbd2 patch that made "is transaction T committed?"
one load instead of a lock: --clients connections, each with --depth ops in
flight, on one shared file (--file-size, laid out and synced first), for
--duration. Modes (--rw, each run in turn):
  randrw     half 4 KiB overwrites, half reads, at random blocks
  randwrite  overwrites only
  randread   reads only
  fsync      every op an fsync of the clean, committed file: the Committed
             check alone (ustore asks it on fsync; reads and buffered writes
             do not ask it)

With --ablated-socket, the same runs go to a second server started with
'ustore serve --ablate-committed-lock' (Committed takes the journal's state
lock), --reps times each, alternating which server goes first, and the report
compares the two: lock-free ops/s over locked.

` + fsyncTargetHelp,
		Example: `  ustore bench committed-check --socket a.sock --ablated-socket b.sock --rw randrw,fsync
  ustore bench committed-check --dir /mnt/ext4 --rw randrw`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var fsz, b int64
			if err := parseSizeFlags(sizeFlag{"file-size", fileSize, &fsz}, sizeFlag{"bs", bs, &b}); err != nil {
				return err
			}
			if err := positive("duration", duration); err != nil {
				return err
			}
			if reps < 1 {
				return usageError{fmt.Errorf("--reps %d: want at least 1", reps)}
			}
			cfg := fsyncbench.CommittedConfig{Clients: clients, Depth: depth, FileSize: fsz, BS: int(b),
				Duration: duration, Warmup: warmup, Label: f.label, Options: f.options(cmd)}
			validate := func() error {
				for _, m := range modes {
					cfg.RW = m
					if err := cfg.Validate(); err != nil {
						return err
					}
				}
				return nil
			}
			run := fsyncRun{workload: "committed-check", validate: validate,
				work: func(ctx context.Context, t fsyncbench.Target) (any, bool, error) {
					if ablatedSocket != "" && f.dir != "" {
						return nil, false, usageError{fmt.Errorf("--ablated-socket is a second server: not with --dir")}
					}
					rs, err := committedCheck(ctx, t, cfg, modes, reps, ablatedSocket, ablatedMetrics, f.root)
					return rs, len(rs) > 0, err
				}}
			if ablatedSocket != "" {
				run.targetNote = " vs " + ablatedSocket + " (--ablate-committed-lock)"
			}
			return f.run(cmd, run)
		},
	}
	f.add(c)
	fs := c.Flags()
	fs.StringVar(&ablatedSocket, "ablated-socket", "", "a second server, started with --ablate-committed-lock, to compare with")
	fs.StringVar(&ablatedMetrics, "ablated-metrics", "", "the second server's metrics endpoint")
	fs.IntVar(&clients, "clients", 10, "connections (fio's jobs)")
	fs.IntVar(&depth, "depth", 10, "ops each client keeps in flight (fio's iodepth)")
	fs.StringSliceVar(&modes, "rw", []string{fsyncbench.RWMixed}, "modes, run in turn: "+strings.Join(fsyncbench.CommittedModes, ", "))
	fs.IntVar(&reps, "reps", 1, "repetitions of each mode (on each server)")
	fs.StringVar(&fileSize, "file-size", "512M", "the shared file")
	fs.StringVar(&bs, "bs", "4k", "bytes per op")
	fs.DurationVar(&duration, "duration", 10*time.Second, "measured time per run")
	fs.DurationVar(&warmup, "warmup", 0, "untimed time before each window (0: a tenth of --duration, at most 1s)")
	return c
}

// committedCheck runs each mode reps times on t; with ablatedSocket, it
// compares t with the second server there (fsyncbench.CommittedCompare).
func committedCheck(ctx context.Context, t fsyncbench.Target, cfg fsyncbench.CommittedConfig, modes []string, reps int,
	ablatedSocket, ablatedMetrics, root string) ([]fsyncbench.CommittedResult, error) {
	if ablatedSocket != "" {
		locked := fsyncbench.NewUstore(ablatedSocket, fsyncbench.UstoreOptions{Root: root, Metrics: ablatedMetrics})
		return fsyncbench.CommittedCompare(ctx, t, locked, cfg, modes, reps)
	}
	// A mode that fails ends its repetitions; the next mode still runs,
	// and the last failure is the one returned.
	var rs []fsyncbench.CommittedResult
	var runErr error
	n := 0
	for _, m := range modes {
		for range reps {
			n++
			cfg.Options = cfg.InWindow(n, len(modes)*reps)
			cfg.RW = m
			r, err := fsyncbench.CommittedCheck(ctx, t, cfg)
			if err != nil {
				runErr = fmt.Errorf("committed-check %s: %w", m, err)
				break
			}
			rs = append(rs, r)
		}
	}
	return rs, runErr
}
