package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"ustore/bench/fsyncbench"
)

func newBenchFsyncRandWriteCommand() *cobra.Command {
	var (
		f                fsyncFlags
		jobs             []int
		fileSize, bs     string
		every            int
		duration, warmup time.Duration
	)
	c := &cobra.Command{
		Use:   "fsync-randwrite",
		Short: "Random 4 KiB writes with an fsync every 4, by 8 and 16 jobs (the 2021 btrfs fsync patch's fio job)",
		Long: `The fio job of the 2021 btrfs patches that took the log mutex and the
parent write locks out of fsync's way: each job (--jobs, one run per count,
each in a fresh directory) has one file (--file-size, laid out first), makes
buffered 4 KiB writes at random offsets, and fsyncs after every --fsync-every
writes, for --duration. It reports write IOPS (writes completed in the
window) and the fsyncs' latency (mean, p50, p90, p99, p99.9, max).

The issue's goal: at least 1.5× btrfs's write IOPS, above ext4's and xfs's,
on the same disk, and the group-commit batch (log_sync_batch_size in the
server's counters) growing with the jobs.

` + fsyncTargetHelp,
		Example: `  ustore bench fsync-randwrite --metrics 127.0.0.1:9464
  ustore bench fsync-randwrite --dir /mnt/btrfs --jobs 8 --duration 30s --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var fsz, b int64
			if err := parseSizeFlags(sizeFlag{"file-size", fileSize, &fsz}, sizeFlag{"bs", bs, &b}); err != nil {
				return err
			}
			if err := positive("duration", duration); err != nil {
				return err
			}
			cfg := fsyncbench.RandWriteConfig{Jobs: jobs, FileSize: fsz, BS: int(b), FsyncEvery: every,
				Duration: duration, Warmup: warmup, Options: f.options(cmd)}
			return f.run(cmd, fsyncRun{workload: "fsync-randwrite", validate: cfg.Validate,
				work: func(ctx context.Context, t fsyncbench.Target) (any, bool, error) {
					rs, err := fsyncbench.RandWrite(ctx, t, cfg)
					return rs, len(rs) > 0, err
				}})
		},
	}
	f.add(c)
	fs := c.Flags()
	fs.IntSliceVar(&jobs, "jobs", []int{8, 16}, "job counts: one run each")
	fs.StringVar(&fileSize, "file-size", "32M", "each job's file")
	fs.StringVar(&bs, "bs", "4k", "bytes per write")
	fs.IntVar(&every, "fsync-every", 4, "writes between a job's fsyncs")
	fs.DurationVar(&duration, "duration", 30*time.Second, "measured time per job count")
	fs.DurationVar(&warmup, "warmup", 0, "untimed time before each window (fio has none)")
	return c
}
