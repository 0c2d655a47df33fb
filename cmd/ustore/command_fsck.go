package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"ustore/dev/devopen"
	"ustore/engine"
	"ustore/store"
)

// errFsck: fsck found problems (exit code 1, after the report).
var errFsck = errors.New("fsck found problems")

func newFsckCommand() *cobra.Command {
	var backend string
	var data bool
	c := &cobra.Command{
		Use:   "fsck [FILE|DEVICE]",
		Short: "Check a ustore filesystem and report what is wrong",
		Long: `Check every tree of a ustore filesystem at its newest durable superblock:
key order within and across nodes, parent/child keys and generations,
checksums, fill bounds, and that referenced space plus free space is the whole
device with no block referenced twice; every file extent has its data
checksums; and the namespace: every name is a matching directory item, index
item and inode back-reference, link counts and directory sizes match the
names, extents add up to each file's byte count and end within a block of
its size, and every inode's and extent's fields are ones ustore can write
(a size within the file size limit, an extent inside the device, no
generation newer than the newest commit). Data blocks are not read: a
damaged data block is found by --data, or by the read that fails with EIO.

--data (a scrub) also reads every data block a file references and checks
it against its stored checksum, in batches of up to 4 MiB with four in
flight; each bad block is printed with its inode, its offset in the file,
its device block and every path of the file, and fsck then exits 1. It
prints how many bytes it read, how long it took and at what speed.

If the log chain the newest superblock names holds an fsync log (the
server stopped without unmounting), fsck replays it first, as mount does (e2fsck replays its
journal too), and says so; otherwise it changes nothing but a damaged copy
of the newest superblock, which it rewrites from its sound twin, as mount
does. Every damaged superblock copy is reported. It exits 0 when the
filesystem is clean (a damaged superblock copy beside a sound one loses
nothing) and 1 when it found problems, which it prints — among them a mount
that had to fall back to an older superblock because neither copy of the
newer one is readable, which may have lost acknowledged state. A device a
running 'ustore serve' holds is refused: stop the server first.`,
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
			// A running server changes the device under fsck's feet: its
			// report would be of no state at all.
			lock, err := devopen.LockDevice(path)
			if err != nil {
				return err
			}
			defer lock.Close()
			d, _, err := devopen.Open(path, devopen.Options{Backend: b, Logger: quietLogger()})
			if err != nil {
				return err
			}
			defer d.Close()
			s, err := store.Open(d, store.Options{Logger: quietLogger()})
			if err != nil {
				return fmt.Errorf("mount %s: %w", path, err)
			}
			if r := s.Replay(); r.Found {
				if r.Lost != nil {
					fmt.Fprintf(cmd.OutOrStdout(), "%s: the fsync log (log generation %d) was damaged and not applied: %v\n", path, r.LogGeneration, r.Lost)
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "%s: replayed the fsync log (log generation %d): %d inodes, %d directory ranges, %d file ranges\n",
						path, r.LogGeneration, r.Inodes, r.DirRanges, r.FileRanges)
				}
			}
			rep := engine.Check(s.Engine())
			cerr := s.Check()
			var scrub *store.ScrubReport
			if data {
				if scrub, err = s.Scrub(cmd.Context()); err != nil {
					cerr = errors.Join(cerr, err)
				}
			}
			// Nothing ran, so closing writes nothing.
			if err := s.Close(context.Background()); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s: %d trees, %d nodes, %d items; %d bytes referenced, %d free\n",
				path, rep.Trees, rep.Nodes, rep.Items, rep.UsedBytes, rep.FreeBytes)
			for _, w := range rep.Warnings {
				fmt.Fprintf(out, "warning: %v\n", w)
			}
			if scrub != nil {
				printScrub(out, path, scrub)
			}
			if err := cerr; err != nil {
				fmt.Fprintf(out, "problems:\n%v\n", err)
				return errFsck
			}
			if scrub != nil && scrub.BadCount > 0 {
				return errFsck
			}
			fmt.Fprintln(out, "clean")
			return nil
		},
	}
	c.Flags().StringVar(&backend, "backend", "auto", "I/O backend: auto, io_uring, syscall")
	c.Flags().BoolVar(&data, "data", false, "also read every data block and check it against its checksum (a scrub)")
	return c
}

// printScrub prints what fsck --data found: the bytes it read and how
// fast, then each bad block.
func printScrub(out io.Writer, path string, r *store.ScrubReport) {
	mbps := 0.0
	if sec := r.Took.Seconds(); sec > 0 {
		mbps = float64(r.Bytes) / 1e6 / sec
	}
	fmt.Fprintf(out, "%s: scrubbed %d bytes of data (%d extents) in %v: %.0f MB/s; %d bad blocks\n",
		path, r.Bytes, r.Extents, r.Took.Round(time.Microsecond), mbps, r.BadCount)
	if r.BadCount == 0 {
		return
	}
	fmt.Fprintln(out, "bad data blocks:")
	for _, b := range r.Bad {
		paths := strings.Join(b.Paths, " ")
		if paths == "" {
			paths = "(path unknown)"
		}
		fmt.Fprintf(out, "  inode %d offset %d (device block %d) %s: %v\n", b.Ino, b.Offset, b.Bytenr, paths, b.Err)
	}
	if cut := r.BadCount - len(r.Bad); cut > 0 {
		fmt.Fprintf(out, "  ... and %d more\n", cut)
	}
}
