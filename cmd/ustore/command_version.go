package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"ustore/dev/devopen"
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and the I/O backend this machine would use",
		Long: `Print ustore's version, the Go and kernel versions, and which I/O backend
(io_uring or pread/pwrite) ustore would use on this machine, and why.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			version, revision := "devel", "unknown"
			if bi, ok := debug.ReadBuildInfo(); ok {
				if bi.Main.Version != "" {
					version = bi.Main.Version
				}
				for _, s := range bi.Settings {
					if s.Key == "vcs.revision" {
						revision = s.Value
					}
				}
			}
			var uts unix.Utsname
			kernel := "unknown"
			if unix.Uname(&uts) == nil {
				kernel = unix.ByteSliceToString(uts.Release[:])
			}
			choice := devopen.Probe()
			fmt.Fprintf(out, "ustore %s (revision %s)\n", version, revision)
			fmt.Fprintf(out, "go:      %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
			fmt.Fprintf(out, "kernel:  %s\n", kernel)
			fmt.Fprintf(out, "backend: %s\n", choice.Backend)
			fmt.Fprintf(out, "reason:  %s\n", choice.Reason)
			return nil
		},
	}
}

// noArgs is cobra.NoArgs with a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if err := cobra.NoArgs(cmd, args); err != nil {
		return usageError{err}
	}
	return nil
}
