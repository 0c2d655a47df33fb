package main

import (
	"fmt"
	"io"
	"runtime"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"ustore/dev/devopen"
)

// versionJSON is version --json's output.
type versionJSON struct {
	Version  string `json:"version"`
	Revision string `json:"revision"`
	Modified bool   `json:"modified"` // the tree had uncommitted changes at build time
	Format   int    `json:"format"`   // the on-disk format version this binary reads and writes
	Go       string `json:"go"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	Kernel   string `json:"kernel"`
	Backend  string `json:"backend"` // io_uring or syscall
	Reason   string `json:"reason"`  // why that backend
}

func newVersionCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the version and the I/O backend this machine would use",
		Long: `Print ustore's version, the Go and kernel versions, and which I/O backend
(io_uring or pread/pwrite) ustore would use on this machine, and why.
--json prints them as one JSON object (fields in docs/CLI.md).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			b := readBuildInfo()
			v := versionJSON{Version: b.Version, Revision: b.Revision, Modified: b.Modified, Format: b.Format,
				Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, Kernel: "unknown"}
			var uts unix.Utsname
			if unix.Uname(&uts) == nil {
				v.Kernel = unix.ByteSliceToString(uts.Release[:])
			}
			choice := devopen.Probe()
			v.Backend, v.Reason = string(choice.Backend), choice.Reason
			return writeResults(cmd.OutOrStdout(), asJSON, v, func(out io.Writer) {
				fmt.Fprintf(out, "ustore %s\n", b)
				fmt.Fprintf(out, "go:      %s %s/%s\n", v.Go, v.OS, v.Arch)
				fmt.Fprintf(out, "kernel:  %s\n", v.Kernel)
				fmt.Fprintf(out, "backend: %s\n", v.Backend)
				fmt.Fprintf(out, "reason:  %s\n", v.Reason)
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// noArgs is cobra.NoArgs with a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if err := cobra.NoArgs(cmd, args); err != nil {
		return usageError{err}
	}
	return nil
}
