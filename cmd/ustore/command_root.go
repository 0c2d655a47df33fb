package main

import (
	"errors"
	"strings"

	"github.com/spf13/cobra"
)

// usageError marks errors in flags or arguments (exit code 2).
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func isUsage(err error) bool {
	var u usageError
	// cobra reports a mistyped subcommand as a plain error.
	return errors.As(err, &u) || strings.HasPrefix(err.Error(), "unknown command ")
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "ustore",
		Short: "ustore — an io_uring storage service with a copy-on-write B-tree engine",
		Long: `ustore is a storage service for Linux: a daemon owns one backing device and
serves directories and files over a Unix socket. Device I/O goes through one
io_uring layer that batches reads, writes and flushes.

Exit codes: 0 success, 1 the command failed, 2 bad flags or arguments (fsck has
e2fsck's: see 'ustore fsck --help'). --json output and exit codes: docs/CLI.md.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// --version: the build and the on-disk format (build_version.go);
		// `ustore version` says more (Go, kernel, I/O backend).
		Version: readBuildInfo().String(),
	}
	root.SetVersionTemplate("ustore {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{err}
	})
	root.AddCommand(newVersionCommand(), newMkfsCommand(), newFsckCommand(), newServeCommand(), newBenchCommand(), newTraceCommand())
	root.AddCommand(newClientCommands()...)
	root.AddCommand(newMountCommand(), newUmountCommand())
	return root
}
