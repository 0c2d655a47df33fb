package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"ustore/bench/fsyncbench"
)

func newBenchCsumFsyncCommand() *cobra.Command {
	var (
		f                        fsyncFlags
		files, every             int
		largeSize, smallSize, bs string
		duration, warmup         time.Duration
	)
	c := &cobra.Command{
		Use:   "csum-fsync",
		Short: "fsync latency of large vs small files under random writes (the 2011 btrfs csum-logging patch's sysbench run)",
		Long: `The sysbench run of the 2011 btrfs patch that stopped logging the checksums
of a file's unchanged data at each fsync: one thread makes 4 KiB random
writes to --files files and fsyncs each of them every --fsync-every writes,
for --duration, first on large files (--large-size, laid out and synced
first), then on small ones (--small-size). It reports requests/s (writes and
fsyncs, as sysbench's events) and the fsyncs' latency for each, and the
large files' fsync latency over the small files' (p50 and mean).

The issue's goal: within 1.2× — fsync's cost follows the change, not the
file's size — and requests/s compared with btrfs and ext4.

` + fsyncTargetHelp,
		Example: `  ustore bench csum-fsync --metrics 127.0.0.1:9464
  ustore bench csum-fsync --dir /mnt/ext4 --large-size 256M --duration 10s`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var large, small, b int64
			if err := parseSizeFlags(sizeFlag{"large-size", largeSize, &large}, sizeFlag{"small-size", smallSize, &small},
				sizeFlag{"bs", bs, &b}); err != nil {
				return err
			}
			if err := positive("duration", duration); err != nil {
				return err
			}
			cfg := fsyncbench.CsumFsyncConfig{Files: files, LargeSize: large, SmallSize: small, BS: int(b), FsyncEvery: every,
				Duration: duration, Warmup: warmup, Options: f.options(cmd)}
			return f.run(cmd, fsyncRun{workload: "csum-fsync", validate: cfg.Validate,
				work: func(ctx context.Context, t fsyncbench.Target) (any, bool, error) {
					r, err := fsyncbench.CsumFsync(ctx, t, cfg)
					return r, err == nil, err
				}})
		},
	}
	f.add(c)
	fs := c.Flags()
	fs.IntVar(&files, "files", 2, "files per phase")
	fs.StringVar(&largeSize, "large-size", "2G", "each file of the large phase")
	fs.StringVar(&smallSize, "small-size", "4M", "each file of the small phase")
	fs.StringVar(&bs, "bs", "4k", "bytes per write")
	fs.IntVar(&every, "fsync-every", 100, "writes between rounds of fsyncs")
	fs.DurationVar(&duration, "duration", 10*time.Second, "measured time per phase")
	fs.DurationVar(&warmup, "warmup", 0, "untimed time before each window")
	return c
}
