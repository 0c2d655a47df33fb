package main

import (
	"fmt"

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
			if err := cfg.Validate(); err != nil {
				return usageError{fmt.Errorf("dir-fsync: %w", err)}
			}
			t, err := f.target(cmd)
			if err != nil {
				return err
			}
			ctx, stop := f.context(cmd)
			defer stop()
			r, runErr := fsyncbench.DirFsync(ctx, t, cfg)
			if runErr != nil {
				return runErr
			}
			rep := fsyncbench.NewReport("dir-fsync", t, f.label)
			rep.Results = r
			return f.print(cmd, rep)
		},
	}
	f.add(c)
	fs := c.Flags()
	fs.IntVar(&files, "files", 1_000_000, "empty files to create in the directory")
	fs.IntVar(&deletes, "deletes", 1000, "files to delete before the second fsync")
	return c
}
