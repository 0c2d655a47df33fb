package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"ustore/dev/devopen"
	"ustore/engine"
)

// errFsck: fsck found problems (exit code 1, after the report).
var errFsck = errors.New("fsck found problems")

func newFsckCommand() *cobra.Command {
	var backend string
	c := &cobra.Command{
		Use:   "fsck [FILE|DEVICE]",
		Short: "Check a ustore filesystem and report what is wrong",
		Long: `Check every tree of a ustore filesystem at its newest durable superblock:
key order within and across nodes, parent/child keys and generations,
checksums, fill bounds, and that referenced space plus free space is the whole
device with no block referenced twice. fsck changes nothing. It exits 0 when
the filesystem is clean and 1 when it found problems, which it prints.`,
		Args: maxOneArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			path := deviceArg(args)
			b, err := devopen.ParseBackend(backend)
			if err != nil {
				return usageError{err}
			}
			if _, err := os.Stat(path); err != nil {
				return err
			}
			d, _, err := devopen.Open(path, devopen.Options{Backend: b, Logger: quietLogger()})
			if err != nil {
				return err
			}
			defer d.Close()
			e, err := engine.Mount(d, engine.Options{Logger: quietLogger()})
			if err != nil {
				return fmt.Errorf("mount %s: %w", path, err)
			}
			rep := engine.Check(e)
			// Nothing ran, so closing writes nothing.
			if err := e.Close(context.Background()); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s: %d trees, %d nodes, %d items; %d bytes referenced, %d free\n",
				path, rep.Trees, rep.Nodes, rep.Items, rep.UsedBytes, rep.FreeBytes)
			if err := rep.Err(); err != nil {
				fmt.Fprintf(out, "problems:\n%v\n", err)
				return errFsck
			}
			fmt.Fprintln(out, "clean")
			return nil
		},
	}
	c.Flags().StringVar(&backend, "backend", "auto", "I/O backend: auto, io_uring, syscall")
	return c
}
