package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"ustore/dev"
	"ustore/dev/devopen"
	"ustore/engine"
	"ustore/store"
)

func newMkfsCommand() *cobra.Command {
	var size, nodeSize, backend string
	var force bool
	c := &cobra.Command{
		Use:   "mkfs [FILE|DEVICE]",
		Short: "Format a file or block device as a ustore filesystem",
		Long: `Format a file or block device as an empty ustore filesystem: a root tree,
an empty fs tree, checksum tree and free space tree, generation 1.

A missing file is created of --size bytes and mode 0600 (whatever the
umask: it will hold every client's data, and 'ustore serve' refuses a data
file others can read); a smaller file is extended. Its space is allocated
(fallocate), so a host filesystem without room refuses it now rather than a
write later; a filesystem without fallocate gets a sparse file. A block
device keeps its own size. If mkfs fails, a file it created is removed again.

Everything on the device is lost, so mkfs refuses a target that holds a
ustore filesystem or another signature it recognises (ext2/3/4, xfs, btrfs,
swap, LUKS, LVM2, md RAID, a GPT or DOS partition table, iso9660), naming
what it found; --force formats it anyway, zeroing the first MiB so that no
old signature is left there. A device a running 'ustore serve' holds is
refused even with --force.`,
		Example: `  ustore mkfs                                   # ustore-data/ustore.img, 1 GiB
  ustore mkfs --size 16G --nodesize 64k /srv/ustore.img
  ustore mkfs --force /srv/ustore.img           # reformat: its data is lost`,
		Args: maxOneArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			sz, err := parseBytes(size)
			if err != nil {
				return usageError{fmt.Errorf("--size: %w", err)}
			}
			ns, err := parseBytes(nodeSize)
			if err != nil {
				return usageError{fmt.Errorf("--nodesize: %w", err)}
			}
			// Values the format cannot take are usage errors too, told
			// before anything is created.
			if ns < engine.NodeSizeMin || ns > engine.NodeSizeMax || ns&(ns-1) != 0 {
				return usageError{fmt.Errorf("--nodesize %s: want a power of two from %dk to %dk", nodeSize, engine.NodeSizeMin>>10, engine.NodeSizeMax>>10)}
			}
			if sz%engine.SectorSize != 0 {
				return usageError{fmt.Errorf("--size %s: want a multiple of %dk", size, engine.SectorSize>>10)}
			}
			if err := checkMkfsSize(deviceArg(args), size, sz, int(ns)); err != nil {
				return usageError{err}
			}
			b, err := devopen.ParseBackend(backend)
			if err != nil {
				return usageError{err}
			}
			return mkfs(mkfsConfig{Path: deviceArg(args), Size: sz, NodeSize: int(ns), Backend: b, Force: force},
				cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := c.Flags()
	f.StringVar(&size, "size", "1G", "size of a file to create or extend, a multiple of 4k (block devices keep theirs)")
	f.StringVar(&nodeSize, "nodesize", "16k", "tree node size: a power of two from 4k to 64k")
	f.StringVar(&backend, "backend", "auto", "I/O backend: auto, io_uring, syscall")
	f.BoolVar(&force, "force", false, "format even a target that holds a filesystem or another recognised signature, destroying it")
	return c
}

// mkfsConfig is what `ustore mkfs` runs with.
type mkfsConfig struct {
	Path     string
	Size     int64
	NodeSize int
	Backend  devopen.Backend
	Force    bool
}

// mkfs formats cfg.Path. The order is the safety argument: create (only a
// missing file, exclusively), lock (never under a server), look for
// signatures (never over data without --force), and only then write; a
// file this call created and locked is removed if anything after fails.
func mkfs(cfg mkfsConfig, out, errOut io.Writer) (err error) {
	if err := os.MkdirAll(filepath.Dir(cfg.Path), dataDirMode); err != nil {
		return err
	}
	created, err := createDataFile(cfg.Path)
	if err != nil {
		return err
	}
	lock, err := devopen.LockDevice(cfg.Path)
	if err != nil {
		// Not removed even if created: whoever holds the lock uses it.
		return err
	}
	defer lock.Close()
	if created != nil {
		defer func() {
			if err != nil {
				removeCreated(cfg.Path, created)
			}
		}()
	}
	var found []foundSignature
	if created == nil {
		if found, err = probePath(cfg.Path); err != nil {
			return fmt.Errorf("mkfs: read %s: %w", cfg.Path, err)
		}
		if len(found) > 0 && !cfg.Force {
			return fmt.Errorf("mkfs: %s holds %s; formatting destroys it: give --force to format it anyway", cfg.Path, describeSignatures(found))
		}
		warnReadable(cfg.Path, errOut)
	}
	d, _, err := devopen.Open(cfg.Path, devopen.Options{Size: cfg.Size, Backend: cfg.Backend, Logger: quietLogger()})
	if err != nil {
		return err
	}
	defer d.Close()
	if len(found) > 0 {
		if err := wipeStart(d); err != nil {
			return fmt.Errorf("mkfs: wipe the old signatures of %s: %w", cfg.Path, err)
		}
	}
	if err := store.Mkfs(d, store.MkfsOptions{NodeSize: cfg.NodeSize}); err != nil {
		return err
	}
	if len(found) > 0 {
		fmt.Fprintf(out, "destroyed %s on %s (--force)\n", describeSignatures(found), cfg.Path)
	}
	fmt.Fprintf(out, "formatted %s: %d bytes, node size %d, backend %s\n", cfg.Path, d.Size(), cfg.NodeSize, d.Backend())
	return nil
}

// wipeStartBytes is how much of an old filesystem's start mkfs --force
// zeroes: every offset of the signature table, and all of ustore's own
// reserved area below its first allocatable block.
const wipeStartBytes = 1 << 20

// wipeStart zeroes the first wipeStartBytes of d (or all of a smaller d),
// durably, so that blkid finds only the new ustore filesystem after a
// forced mkfs over another.
func wipeStart(d dev.Device) error {
	buf := dev.AlignedBuffer(int(min(wipeStartBytes, d.Size())))
	return d.WriteDurable([]dev.IO{{Off: 0, Buf: buf}})
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

// checkMkfsSize refuses a --size too small to format, when it is the size
// the device will have: a file that is missing or smaller (a block
// device, or a larger file, keeps its own size).
func checkMkfsSize(path, flag string, size int64, nodeSize int) error {
	minSize := engine.MinDeviceSize(nodeSize)
	if uint64(size) >= minSize {
		return nil
	}
	if st, err := os.Stat(path); err == nil && (!st.Mode().IsRegular() || uint64(st.Size()) >= minSize) {
		return nil
	}
	return fmt.Errorf("--size %s: too small, want at least %dk with %dk nodes", flag, minSize>>10, nodeSize>>10)
}
