package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"ustore/dev/devopen"
	"ustore/engine"
	"ustore/store"
)

// fsck's exit codes, after e2fsck's (fsck(8)); ustore's fsck repairs
// nothing but a damaged superblock copy, so every problem it finds is left
// as it is. A usage error is 2, as for every ustore command.
const (
	fsckClean    = 0 // nothing wrong
	fsckWarnings = 1 // sound, with damage that lost nothing (e2fsck: "errors corrected")
	fsckProblems = 4 // problems found and left as they are (e2fsck: "errors left uncorrected")
	fsckError    = 8 // could not check (e2fsck: "operational error")
)

// fsckExit is a failed fsck: its message, and its exit code.
type fsckExit struct {
	code int
	err  error
}

func (e *fsckExit) Error() string { return e.err.Error() }
func (e *fsckExit) Unwrap() error { return e.err }
func (e *fsckExit) exitCode() int { return e.code }

const fsckLong = `Check every tree of a ustore filesystem at its newest durable superblock:
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
its device block and every path of the file. It prints how many bytes it
read, how long it took and at what speed.

If the log chain the newest superblock names holds an fsync log (the
server stopped without unmounting), fsck replays it first, as mount does (e2fsck replays its
journal too), and says so; otherwise it changes nothing but a damaged copy
of the newest superblock, which it rewrites from its sound twin, as mount
does. Every damaged superblock copy is reported. A device a running
'ustore serve' holds is refused: stop the server first.

--json prints the report as one JSON object on stdout (also when the check
could not run); its fields are in docs/CLI.md.

Exit codes, after e2fsck's:
  0  clean
  1  sound, with warnings: damage that lost nothing (a superblock copy
     rewritten from its sound twin, or an older copy the next superblock
     write replaces)
  2  bad flags or arguments
  4  problems found, left as they are (fsck repairs nothing): a damaged
     tree, namespace or data block; an fsync log too damaged to replay; or
     a mount that had to fall back to an older superblock because neither
     copy of the newer one is readable, which may have lost acknowledged
     state
  8  could not check: no such file, not a ustore filesystem, the device
     in use by a server, an I/O error`

func newFsckCommand() *cobra.Command {
	var backend string
	var data, asJSON bool
	c := &cobra.Command{
		Use:   "fsck [FILE|DEVICE]",
		Short: "Check a ustore filesystem and report what is wrong",
		Long:  fsckLong,
		Example: `  ustore fsck ustore-data/ustore.img
  ustore fsck --data --json /srv/ustore.img | jq '.problems[].message'`,
		Args: maxOneArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			path := deviceArg(args)
			b, err := devopen.ParseBackend(backend)
			if err != nil {
				return usageError{err}
			}
			rep, err := fsck(cmd.Context(), path, b, data)
			if err != nil {
				err = &fsckExit{code: fsckError, err: err}
				rep = &fsckReport{Device: path, Status: "error", ExitCode: fsckError, Error: err.Error(),
					Warnings: []string{}, Problems: []fsckProblem{}}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if werr := writeResults(out, true, rep, nil); werr != nil && err == nil {
					return werr
				}
			} else if err == nil {
				rep.writeText(out)
			}
			if err != nil {
				return err
			}
			return rep.err()
		},
	}
	c.Flags().StringVar(&backend, "backend", "auto", "I/O backend: auto, io_uring, syscall")
	c.Flags().BoolVar(&data, "data", false, "also read every data block and check it against its checksum (a scrub)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return c
}

// fsck checks the filesystem at path. An error means it could not check
// (exit code 8); what it found is in the report.
func fsck(ctx context.Context, path string, b devopen.Backend, data bool) (*fsckReport, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	// A running server changes the device under fsck's feet: its report
	// would be of no state at all.
	lock, err := devopen.LockDevice(path)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	d, _, err := devopen.Open(path, devopen.Options{Backend: b, Logger: quietLogger()})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	rep := &fsckReport{Device: path, Warnings: []string{}, Problems: []fsckProblem{}}
	s, err := store.Open(d, store.Options{Logger: quietLogger()})
	if errors.Is(err, engine.ErrNotFormatted) || errors.Is(err, engine.ErrFormatVersion) {
		return nil, mountError(path, err)
	}
	if err != nil {
		// A ustore filesystem too damaged to mount (its superblocks, its
		// root tree, its root directory): a problem found, not a check
		// that could not run.
		rep.problem("mount", mountError(path, err).Error())
		rep.Status, rep.ExitCode = "problems", fsckProblems
		return rep, nil
	}
	if r := s.Replay(); r.Found {
		rep.Replay = &fsckReplay{LogGeneration: uint64(r.LogGeneration), Applied: r.Lost == nil,
			Inodes: r.Inodes, DirRanges: r.DirRanges, FileRanges: r.FileRanges}
		if r.Lost != nil {
			rep.Replay.Error = r.Lost.Error()
			rep.problem("log", fmt.Sprintf("the fsync log (log generation %d) was damaged and not applied: %v", r.LogGeneration, r.Lost))
		}
	}
	er := engine.Check(s.Engine())
	rep.Trees, rep.Nodes, rep.Items, rep.UsedBytes, rep.FreeBytes = er.Trees, er.Nodes, er.Items, er.UsedBytes, er.FreeBytes
	for _, w := range er.Warnings {
		rep.Warnings = append(rep.Warnings, w.Error())
	}
	for _, e := range joined(s.Check()) {
		rep.problem("check", e.Error())
	}
	if data {
		sr, err := s.Scrub(ctx)
		if err != nil {
			rep.problem("scrub", err.Error())
		}
		if sr != nil {
			rep.addScrub(sr)
		}
	}
	// Nothing ran, so closing writes nothing.
	if err := s.Close(context.Background()); err != nil {
		return nil, err
	}
	switch {
	case len(rep.Problems) > 0:
		rep.Status, rep.ExitCode = "problems", fsckProblems
	case len(rep.Warnings) > 0:
		rep.Status, rep.ExitCode = "warnings", fsckWarnings
	default:
		rep.Status, rep.ExitCode = "clean", fsckClean
	}
	return rep, nil
}

// mountError is a failed mount in one line: a device with no ustore
// superblock is "not a ustore filesystem", not its four superblock copies'
// errors one a line, each with the engine's prefixes; other errors' lines
// are joined with "; ".
func mountError(path string, err error) error {
	if errors.Is(err, engine.ErrNotFormatted) {
		return &causeError{msg: path + ": not a ustore filesystem (no superblock copy carries ustore's magic number)", err: err}
	}
	return &causeError{msg: "mount " + path + ": " + strings.ReplaceAll(err.Error(), "\n", "; "), err: err}
}

// joined is err's errors as errors.Join joined them (its own, nested ones
// flattened), or err alone; none for nil.
func joined(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	// errors.Join's message is its errors' a line; fmt.Errorf with two %w
	// has Unwrap() []error too, with a message of its own.
	var msgs []string
	for _, e := range j.Unwrap() {
		msgs = append(msgs, e.Error())
	}
	if strings.Join(msgs, "\n") != err.Error() {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, joined(e)...)
	}
	return out
}
