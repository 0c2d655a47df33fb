package main

import (
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
			fsz, err := parseBytes(fileSize)
			if err != nil {
				return usageError{fmt.Errorf("--file-size: %w", err)}
			}
			b, err := parseBytes(bs)
			if err != nil {
				return usageError{fmt.Errorf("--bs: %w", err)}
			}
			if err := positive("duration", duration); err != nil {
				return err
			}
			if reps < 1 {
				return usageError{fmt.Errorf("--reps %d: want at least 1", reps)}
			}
			cfg := fsyncbench.CommittedConfig{Clients: clients, Depth: depth, FileSize: fsz, BS: int(b),
				Duration: duration, Warmup: warmup, Label: f.label, Options: f.options(cmd)}
			for _, m := range modes {
				cfg.RW = m
				if err := cfg.Validate(); err != nil {
					return usageError{fmt.Errorf("committed-check: %w", err)}
				}
			}
			t, err := f.target(cmd)
			if err != nil {
				return err
			}
			if ablatedSocket != "" && f.dir != "" {
				return usageError{fmt.Errorf("--ablated-socket is a second server: not with --dir")}
			}
			ctx, stop := f.context(cmd)
			defer stop()
			var rs []fsyncbench.CommittedResult
			var runErr error
			if ablatedSocket != "" {
				locked := fsyncbench.NewUstore(ablatedSocket, fsyncbench.UstoreOptions{Root: f.root, Metrics: ablatedMetrics})
				rs, runErr = fsyncbench.CommittedCompare(ctx, t, locked, cfg, modes, reps)
			} else {
				for _, m := range modes {
					for range reps {
						cfg.RW = m
						r, err := fsyncbench.CommittedCheck(ctx, t, cfg)
						if err != nil {
							runErr = fmt.Errorf("committed-check %s: %w", m, err)
							break
						}
						rs = append(rs, r)
					}
				}
			}
			if len(rs) > 0 {
				rep := fsyncbench.NewReport("committed-check", t, f.label)
				if ablatedSocket != "" {
					rep.Target += " vs " + ablatedSocket + " (--ablate-committed-lock)"
				}
				rep.Results = rs
				if err := f.print(cmd, rep); err != nil {
					return err
				}
			}
			return runErr
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
