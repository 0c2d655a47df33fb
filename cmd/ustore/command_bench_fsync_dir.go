package main

import (
	"context"

	"github.com/spf13/cobra"

	"ustore/bench/fsyncbench"
)

func newBenchDirFsyncCommand() *cobra.Command {
	var (
		f              fsyncFlags
		files, deletes int
	)
	c := &cobra.Command{
		Use:   "dir-fsync",
		Short: "fsync of a directory after 1,000,000 creates and after 1000 deletes (the 2021 btrfs bulk-insertion patch's test)",
		Long: `The test of the 2021 btrfs patches that insert a directory's items in bulk:
create file_1..file_N empty in a new directory (--files, one at a time),
fsync the directory, sync, delete file_1 and every (N/--deletes)th file
after it, and fsync the directory again. Each step is timed (ms).

The issue's goal: both directory fsyncs faster than btrfs's on the same
disk, with 16 KiB and with 64 KiB nodes (format the server's device with
'ustore mkfs --nodesize').

` + fsyncTargetHelp,
		Example: `  ustore bench dir-fsync --files 100000 --metrics 127.0.0.1:9464
  ustore bench dir-fsync --dir /mnt/btrfs --keep --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg := fsyncbench.DirFsyncConfig{Files: files, Deletes: deletes, Options: f.options(cmd)}
			return f.run(cmd, fsyncRun{workload: "dir-fsync", validate: cfg.Validate,
				work: func(ctx context.Context, t fsyncbench.Target) (any, bool, error) {
					r, err := fsyncbench.DirFsync(ctx, t, cfg)
					return r, err == nil, err
				}})
		},
	}
	f.add(c)
	fs := c.Flags()
	fs.IntVar(&files, "files", 1_000_000, "empty files to create in the directory")
	fs.IntVar(&deletes, "deletes", 1000, "files to delete before the second fsync")
	return c
}
