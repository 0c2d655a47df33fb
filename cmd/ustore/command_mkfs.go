package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"ustore/dev/devopen"
	"ustore/server"
	"ustore/store"
)

func newMkfsCommand() *cobra.Command {
	var size, nodeSize, backend string
	c := &cobra.Command{
		Use:   "mkfs [FILE|DEVICE]",
		Short: "Format a file or block device as a ustore filesystem",
		Long: `Format a file or block device as an empty ustore filesystem: a root tree,
an empty fs tree, checksum tree and free space tree, generation 1.

A missing file is created, sparse, of --size bytes; a smaller file is
extended. A block device keeps its own size. Everything on the device is lost.
A device a running 'ustore serve' holds is refused.`,
		Example: `  ustore mkfs                                   # ustore-data/ustore.img, 1 GiB
  ustore mkfs --size 16G --nodesize 64k /srv/ustore.img`,
		Args: maxOneArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			path := deviceArg(args)
			sz, err := parseBytes(size)
			if err != nil {
				return usageError{fmt.Errorf("--size: %w", err)}
			}
			ns, err := parseBytes(nodeSize)
			if err != nil {
				return usageError{fmt.Errorf("--nodesize: %w", err)}
			}
			b, err := devopen.ParseBackend(backend)
			if err != nil {
				return usageError{err}
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			// Never format under a running server.
			if _, err := os.Stat(path); err == nil {
				lock, err := server.LockDevice(path)
				if err != nil {
					return err
				}
				defer lock.Close()
			}
			d, _, err := devopen.Open(path, devopen.Options{Size: sz, Backend: b, Logger: quietLogger()})
			if err != nil {
				return err
			}
			defer d.Close()
			if err := store.Mkfs(d, store.MkfsOptions{NodeSize: int(ns)}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "formatted %s: %d bytes, node size %d, backend %s\n", path, d.Size(), ns, d.Backend())
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&size, "size", "1G", "size of a file to create or extend (block devices keep theirs)")
	f.StringVar(&nodeSize, "nodesize", "16k", "tree node size: a power of two from 4k to 64k")
	f.StringVar(&backend, "backend", "auto", "I/O backend: auto, io_uring, syscall")
	return c
}

// defaultDevice is where ustore keeps its data when no path is given.
const defaultDevice = "ustore-data/ustore.img"

func deviceArg(args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	return defaultDevice
}

func maxOneArg(cmd *cobra.Command, args []string) error {
	if err := cobra.MaximumNArgs(1)(cmd, args); err != nil {
		return usageError{err}
	}
	return nil
}

// quietLogger keeps library Info lines out of a command's output; warnings
// and errors still reach stderr.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
