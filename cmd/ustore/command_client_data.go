package main

// The client commands on file data: put, get, cat, write, read, truncate,
// fallocate, fsync, sync.

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/spf13/cobra"

	"ustore/proto"
)

// input opens FILE, or stdin for "-" or no FILE.
func input(cmd *cobra.Command, args []string, i int) (io.Reader, func(), error) {
	if len(args) <= i || args[i] == "-" {
		return cmd.InOrStdin(), func() {}, nil
	}
	f, err := os.Open(args[i])
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}

func newPutCommand() *cobra.Command {
	var cf clientFlags
	var fsync bool
	var progress string
	c := &cobra.Command{
		Use:   "put PATH [FILE|-]",
		Short: "Store a file: FILE, or stdin, becomes the content of PATH",
		Long: `Store a file: the content of FILE (or of stdin, for - or no FILE) becomes
the file at PATH, created or replaced. It is streamed into a temporary file
in PATH's directory, which must exist, and renamed over PATH at the end:
readers see the old content or the new, never a part. If the copy fails or is
interrupted, the temporary file is removed and PATH keeps its old content.
With --fsync the file and its name are durable when put returns; without,
they are at the server's next commit (within its --commit-interval).
A file of 16 MiB or more shows a progress bar (bytes, rate, time left) on
stderr when stderr is a terminal (--progress).` + clientLong,
		Example: `  ustore put /etc-backup/hosts /etc/hosts
  tar c ./src | ustore put --fsync /backups/src.tar
  echo hello | ustore put /greeting`,
		Args: rangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkProgressMode(progress); err != nil {
				return err
			}
			p := storePath(args[0])
			src, closeSrc, err := input(cmd, args, 1)
			if err != nil {
				return err
			}
			defer closeSrc()
			return cf.run(cmd, func(s *session) error {
				w, err := s.c.OpenWriter(s.ctx, p, fsync)
				if err != nil {
					return s.fail("put", p, err)
				}
				bar, err := newTransferBar(cmd, progress, "put "+p, inputSize(src))
				if err != nil {
					w.Abort()
					return err
				}
				// An error reading the input is returned as it is (it
				// names the input); a write's is put's.
				_, err = copyStream(w, tagged{bar.reader(src)})
				bar.finish(err == nil)
				if err != nil {
					w.Abort()
					var te tagError
					if errors.As(err, &te) {
						return te.err
					}
					return s.fail("put", p, err)
				}
				return s.fail("put", p, w.Close())
			})
		},
	}
	c.ValidArgsFunction = completeArgs(&cf, false, argStore, argLocal)
	cf.add(c)
	c.Flags().BoolVar(&fsync, "fsync", false, "make the file and its name durable before returning")
	addProgressFlag(c, &progress)
	return c
}

// inputSize is the size of put's input when it is a regular file, else -1
// (stdin from a pipe: unknown until its end).
func inputSize(r io.Reader) int64 {
	f, ok := r.(*os.File)
	if !ok {
		return -1
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return -1
	}
	return fi.Size()
}

// getTo streams the file at p into w, with a progress bar when bar, given
// the file's size, returns one. An error writing w is returned as it is
// (it names the output); a read's is op's.
func (s *session) getTo(op, p string, w io.Writer, bar func(size int64) (*transferBar, error)) error {
	r, err := s.c.OpenReader(s.ctx, p)
	if err != nil {
		return s.fail(op, p, err)
	}
	defer r.Close()
	var b *transferBar
	if bar != nil {
		if b, err = bar(int64(r.Attr().Size)); err != nil {
			return err
		}
	}
	_, err = copyStream(b.writer(w), tagged{r})
	b.finish(err == nil)
	var te tagError
	if errors.As(err, &te) {
		return s.fail(op, p, te.err)
	}
	return err
}

// tagged marks the errors of its reader (but io.EOF) as tagError, so that
// a copy's caller tells them from the writer's.
type tagged struct{ r io.Reader }

type tagError struct{ err error }

func (e tagError) Error() string { return e.err.Error() }

func (t tagged) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && err != io.EOF {
		err = tagError{err}
	}
	return n, err
}

func newGetCommand() *cobra.Command {
	var cf clientFlags
	var output, progress string
	c := &cobra.Command{
		Use:   "get PATH",
		Short: "Write a file's content to stdout (or to --output)",
		Long: `Write the content of the file at PATH to stdout, or to a local file with
--output. The file is streamed (pipelined reads of 1 MiB chunks), so it may be
larger than memory; its content is the one it had when get began, up to the
size it had then. A file of 16 MiB or more shows a progress bar (bytes,
rate, time left) on stderr when stderr is a terminal (--progress).` + clientLong,
		Example: `  ustore get /greeting
  ustore get /backups/src.tar | tar x
  ustore get -o hosts /etc-backup/hosts`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkProgressMode(progress); err != nil {
				return err
			}
			p := storePath(args[0])
			bar := func(size int64) (*transferBar, error) { return newTransferBar(cmd, progress, "get "+p, size) }
			return cf.run(cmd, func(s *session) error {
				if output == "" || output == "-" {
					return s.getTo("get", p, cmd.OutOrStdout(), bar)
				}
				f, err := os.Create(output)
				if err != nil {
					return err
				}
				err = s.getTo("get", p, f, bar)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					os.Remove(output)
				}
				return err
			})
		},
	}
	c.ValidArgsFunction = completeArgs(&cf, false, argStore)
	cf.add(c)
	c.Flags().StringVarP(&output, "output", "o", "", "write to this local file instead of stdout")
	addProgressFlag(c, &progress)
	return c
}

func newCatCommand() *cobra.Command {
	var cf clientFlags
	c := &cobra.Command{
		Use:   "cat PATH...",
		Short: "Write the content of one or more files to stdout, one after the other",
		Long: `Write the content of each file, in the order given, to stdout, streamed
as get streams it. It stops at the first file that cannot be read.` + clientLong,
		Example: `  ustore cat /greeting
  ustore cat /logs/part-1 /logs/part-2 > all.log`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cf.run(cmd, func(s *session) error {
				for _, a := range args {
					if err := s.getTo("cat", storePath(a), cmd.OutOrStdout(), nil); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	c.ValidArgsFunction = completeArgs(&cf, true, argStore)
	cf.add(c)
	return c
}

// writeChunk is how much write reads from its input before sending it (in
// pipelined requests of at most the server's IOSizeMax).
const writeChunk = 8 << 20

func newWriteCommand() *cobra.Command {
	var cf clientFlags
	var create, fsync bool
	c := &cobra.Command{
		Use:   "write PATH OFFSET [FILE|-]",
		Short: "Write FILE, or stdin, into an existing file at OFFSET",
		Long: `Write the content of FILE (or of stdin, for - or no FILE) into the file at
PATH, starting at byte OFFSET, in place: the bytes before and after stay,
and the file grows if the data goes past its end (a gap reads as zeros).
Unlike put, this changes the file as it goes: a reader may see part of the
new data. The file must exist, unless --create. OFFSET takes the suffixes
k, M, G (powers of 1024). With --fsync the data is durable on return.` + clientLong,
		Example: `  echo -n patch | ustore write /data/file 4096
  ustore write --create /data/log 0 part-1.bin
  ustore write --fsync /data/file 1M block.bin`,
		Args: rangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := storePath(args[0])
			off, err := parseSize("OFFSET", args[1])
			if err != nil {
				return err
			}
			src, closeSrc, err := input(cmd, args, 2)
			if err != nil {
				return err
			}
			defer closeSrc()
			return cf.run(cmd, func(s *session) error {
				a, err := s.writeTarget(p, create)
				if err != nil {
					return err
				}
				buf := make([]byte, writeChunk)
				for {
					n, rerr := io.ReadFull(src, buf)
					if n > 0 {
						if _, err := s.c.Write(s.ctx, a.Ino, off, buf[:n]); err != nil {
							return s.fail("write", p, err)
						}
						off += uint64(n)
					}
					if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
						break
					}
					if rerr != nil {
						return rerr
					}
				}
				if fsync {
					return s.fail("fsync", p, s.c.Fsync(s.ctx, a.Ino, false))
				}
				return nil
			})
		},
	}
	c.ValidArgsFunction = completeArgs(&cf, false, argStore, argNone, argLocal)
	cf.add(c)
	c.Flags().BoolVar(&create, "create", false, "create the file if it does not exist")
	c.Flags().BoolVar(&fsync, "fsync", false, "make the data durable before returning")
	return c
}

// writeTarget resolves the file write writes into: with create, a missing
// one is created (mode 0644) in its existing directory. A directory is
// EISDIR.
func (s *session) writeTarget(p string, create bool) (proto.Attr, error) {
	a, err := s.c.Resolve(s.ctx, p)
	if errors.Is(err, fs.ErrNotExist) && create {
		var dir proto.Attr
		var name string
		if dir, name, err = s.parent("write", p); err != nil {
			return proto.Attr{}, err
		}
		a, err = s.c.Create(s.ctx, dir.Ino, name, 0o644)
		if errors.Is(err, fs.ErrExist) { // created meanwhile
			a, err = s.c.Resolve(s.ctx, p)
		}
	}
	if err != nil {
		return proto.Attr{}, s.fail("write", p, err)
	}
	if a.IsDir() {
		return proto.Attr{}, s.fail("write", p, syscall.EISDIR)
	}
	return a, nil
}

func newReadCommand() *cobra.Command {
	var cf clientFlags
	c := &cobra.Command{
		Use:   "read PATH OFFSET LENGTH",
		Short: "Write LENGTH bytes of a file, from OFFSET, to stdout",
		Long: `Write up to LENGTH bytes of the file at PATH, starting at byte OFFSET, to
stdout: fewer if the file ends first, nothing at or past its end. OFFSET and
LENGTH take the suffixes k, M, G (powers of 1024).` + clientLong,
		Example: `  ustore read /data/file 0 16
  ustore read /data/file 1M 4k | xxd`,
		Args: exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := storePath(args[0])
			off, err := parseSize("OFFSET", args[1])
			if err != nil {
				return err
			}
			length, err := parseSize("LENGTH", args[2])
			if err != nil {
				return err
			}
			return cf.runAtFile(cmd, "read", p, func(s *session, a proto.Attr) error {
				out := cmd.OutOrStdout()
				buf := make([]byte, min(length, writeChunk))
				for length > 0 {
					want := min(length, uint64(len(buf)))
					n, err := s.c.Read(s.ctx, a.Ino, off, buf[:want])
					if err != nil {
						return s.fail("read", p, err)
					}
					if _, err := out.Write(buf[:n]); err != nil {
						return err
					}
					if uint64(n) < want {
						break // the end of the file
					}
					off += uint64(n)
					length -= uint64(n)
				}
				return nil
			})
		},
	}
	c.ValidArgsFunction = completeArgs(&cf, false, argStore)
	cf.add(c)
	return c
}

func newTruncateCommand() *cobra.Command {
	var cf clientFlags
	c := &cobra.Command{
		Use:   "truncate PATH SIZE",
		Short: "Set a file's size: cut it, or extend it with zeros",
		Long: `Set the size of the file at PATH to SIZE bytes: bytes past SIZE are cut
off; a larger SIZE extends the file with zeros (no space is taken for
them). SIZE takes the suffixes k, M, G, T (powers of 1024).` + clientLong,
		Example: `  ustore truncate /data/file 0
  ustore truncate /data/sparse 1G`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := storePath(args[0])
			size, err := parseSize("SIZE", args[1])
			if err != nil {
				return err
			}
			return cf.runAtFile(cmd, "truncate", p, func(s *session, a proto.Attr) error {
				return s.fail("truncate", p, s.c.Truncate(s.ctx, a.Ino, size))
			})
		},
	}
	c.ValidArgsFunction = completeArgs(&cf, false, argStore)
	cf.add(c)
	return c
}

func newFallocateCommand() *cobra.Command {
	var cf clientFlags
	var keepSize, punchHole bool
	var offset, length string
	c := &cobra.Command{
		Use:   "fallocate [-n|--keep-size] [-p|--punch-hole] [-o OFFSET] -l LENGTH PATH",
		Short: "Allocate or free a file's blocks, as fallocate(1)",
		Long: `Allocate the blocks of the file at PATH in [OFFSET, OFFSET+LENGTH) as
zeros where it has holes, growing the file if the range ends past it, as
fallocate(1) and fallocate(2) do; the flags are util-linux's. With
--keep-size the size stays (blocks past the end are not allocated: this store
has no preallocated extents). --punch-hole frees the whole blocks of the
range and zeroes the partial blocks at its edges; it implies --keep-size.
OFFSET and LENGTH take the suffixes k, M, G, T (powers of 1024). An
allocation the device cannot hold fails with "no space left on device"
before anything changes; an allocated block is still copy-on-write, so a
later overwrite can still meet a full device.` + clientLong,
		Example: `  ustore fallocate -l 1G /data/vm.img
  ustore fallocate -n -o 4M -l 16M /data/vm.img
  ustore fallocate -p -o 0 -l 1M /data/vm.img`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if length == "" {
				return usageError{errors.New("-l/--length is required")}
			}
			off, err := parseSize("--offset", offset)
			if err != nil {
				return err
			}
			n, err := parseSize("--length", length)
			if err != nil {
				return err
			}
			if n == 0 {
				return usageError{errors.New("--length: want more than 0")}
			}
			var mode uint32
			if keepSize {
				mode |= proto.FallocKeepSize
			}
			if punchHole {
				mode |= proto.FallocPunchHole | proto.FallocKeepSize
			}
			p := storePath(args[0])
			return cf.runAtFile(cmd, "fallocate", p, func(s *session, a proto.Attr) error {
				_, err := s.c.Fallocate(s.ctx, a.Ino, mode, off, n)
				return s.fail("fallocate", p, err)
			})
		},
	}
	c.ValidArgsFunction = completeArgs(&cf, false, argStore)
	cf.add(c)
	c.Flags().BoolVarP(&keepSize, "keep-size", "n", false, "do not change the file's size")
	c.Flags().BoolVarP(&punchHole, "punch-hole", "p", false, "free the range's blocks (implies --keep-size)")
	c.Flags().StringVarP(&offset, "offset", "o", "0", "where the range starts, in bytes")
	c.Flags().StringVarP(&length, "length", "l", "", "the range's length, in bytes (required)")
	return c
}

func newFsyncCommand() *cobra.Command {
	var cf clientFlags
	var data bool
	c := &cobra.Command{
		Use:   "fsync PATH",
		Short: "Make a file (or directory) durable",
		Long: `Make the file or directory at PATH durable, as fsync(2): its data and
attributes, and a new file's name. With --data, as fdatasync(2): its data and
what reading it needs (the size), not its other attributes.` + clientLong,
		Example: `  ustore fsync /data/file
  ustore fsync --data /data/log`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := storePath(args[0])
			return cf.runAt(cmd, "fsync", p, func(s *session, a proto.Attr) error {
				return s.fail("fsync", p, s.c.Fsync(s.ctx, a.Ino, data))
			})
		},
	}
	c.ValidArgsFunction = completeArgs(&cf, false, argStore)
	cf.add(c)
	c.Flags().BoolVar(&data, "data", false, "data only, as fdatasync(2)")
	return c
}

func newSyncCommand() *cobra.Command {
	var cf clientFlags
	c := &cobra.Command{
		Use:   "sync",
		Short: "Make everything the server has answered durable",
		Long: `Commit: everything the server answered before sync is durable when it
returns, as sync(2) for the whole store.` + clientLong,
		Example: `  ustore sync`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cf.run(cmd, func(s *session) error {
				if err := s.c.Sync(s.ctx); err != nil {
					return s.failStore("sync", err)
				}
				return nil
			})
		},
	}
	c.ValidArgsFunction = cobra.NoFileCompletions
	cf.add(c)
	return c
}
