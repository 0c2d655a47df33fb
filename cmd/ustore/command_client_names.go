package main

// The client commands on names and the store: stat, mkdir, rm, mv, df
// (ls is command_client_ls.go).

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"ustore/client"
	"ustore/proto"
)

// statParallel is how many stats (or removals) ls -l and rm -r keep in
// flight on the connection.
const statParallel = 32

// dtDir is a directory entry's d_type for a directory.
const dtDir = 4

// modeString is st_mode as ls shows it: "drwxr-xr-x".
func modeString(mode uint32) string {
	b := []byte("?rwxrwxrwx")
	switch mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		b[0] = 'd'
	case syscall.S_IFREG:
		b[0] = '-'
	case syscall.S_IFLNK:
		b[0] = 'l'
	}
	for i := range 9 {
		if mode&(1<<(8-i)) == 0 {
			b[1+i] = '-'
		}
	}
	special := func(bit uint32, at int, set, unset byte) {
		if mode&bit != 0 {
			if b[at] == '-' {
				b[at] = unset
			} else {
				b[at] = set
			}
		}
	}
	special(syscall.S_ISUID, 3, 's', 'S')
	special(syscall.S_ISGID, 6, 's', 'S')
	special(syscall.S_ISVTX, 9, 't', 'T')
	return string(b)
}

// typeName is st_mode's file type in words.
func typeName(mode uint32) string {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		return "directory"
	case syscall.S_IFREG:
		return "regular file"
	case syscall.S_IFLNK:
		return "symbolic link"
	}
	return fmt.Sprintf("type %#o", mode&syscall.S_IFMT)
}

func timeOf(t proto.Timespec) time.Time { return t.Time() }

// statJSON is stat --json's output.
type statJSON struct {
	Path       string `json:"path"`
	Type       string `json:"type"`
	Ino        uint64 `json:"ino"`
	Generation uint64 `json:"generation"`
	Mode       string `json:"mode"` // permission bits in octal, "0644"
	Nlink      uint32 `json:"nlink"`
	UID        uint32 `json:"uid"`
	GID        uint32 `json:"gid"`
	Size       uint64 `json:"size"`
	Blocks     uint64 `json:"blocks"` // bytes allocated
	Atime      string `json:"atime"`
	Mtime      string `json:"mtime"`
	Ctime      string `json:"ctime"`
	Btime      string `json:"btime"`
	Target     string `json:"target,omitempty"` // a symbolic link's
}

func newStatCommand() *cobra.Command {
	var cf clientFlags
	var asJSON bool
	c := &cobra.Command{
		Use:   "stat PATH",
		Short: "Show a file's or directory's attributes",
		Long: `Show the attributes of the file or directory at PATH: type, inode and
generation, permissions, links, owner, size, bytes allocated, and the access,
modification, change and birth times. --json prints them as one JSON object
(times in RFC 3339 with nanoseconds, mode as octal permission bits). A
symbolic link at PATH is shown itself, not what it points at (as stat -L
does not), with its target.` + clientLong,
		Example: `  ustore stat /greeting
  ustore stat --json /data | jq .size`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := storePath(args[0])
			return cf.runAt(cmd, "stat", p, func(s *session, a proto.Attr) error {
				target, err := s.targetOf(p, a)
				if err != nil {
					return err
				}
				return printStat(cmd.OutOrStdout(), p, a, target, asJSON)
			})
		},
	}
	c.ValidArgsFunction = completeArgs(&cf, false, argStore)
	cf.add(c)
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// isLink reports whether a is a symbolic link's.
func isLink(a proto.Attr) bool { return a.Mode&syscall.S_IFMT == syscall.S_IFLNK }

// targetOf is the target of the symbolic link a at p, "" for anything
// else.
func (s *session) targetOf(p string, a proto.Attr) (string, error) {
	if !isLink(a) {
		return "", nil
	}
	target, err := s.c.Readlink(s.ctx, a.Ino)
	return target, s.fail("readlink", p, err)
}

// statJSONOf is a's stat --json object, for the path p (target: a
// symbolic link's).
func statJSONOf(p string, a proto.Attr, target string) statJSON {
	ts := func(t proto.Timespec) string { return timeOf(t).UTC().Format(time.RFC3339Nano) }
	typ := "file"
	switch {
	case a.IsDir():
		typ = "directory"
	case isLink(a):
		typ = "symlink"
	}
	return statJSON{Path: p, Type: typ, Ino: a.Ino, Generation: a.Generation,
		Mode: fmt.Sprintf("%04o", a.Mode&0o7777), Nlink: a.Nlink, UID: a.UID, GID: a.GID,
		Size: a.Size, Blocks: a.Blocks,
		Atime: ts(a.Atime), Mtime: ts(a.Mtime), Ctime: ts(a.Ctime), Btime: ts(a.Btime), Target: target}
}

// printStat prints stat's output for a at p (target: a symbolic link's):
// as text, or as JSON.
func printStat(out io.Writer, p string, a proto.Attr, target string, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(statJSONOf(p, a, target))
	}
	if target != "" {
		p += " -> " + target
	}
	lt := func(t proto.Timespec) string { return timeOf(t).Local().Format("2006-01-02 15:04:05.000000000 -0700") }
	_, err := fmt.Fprintf(out, `  path: %s
  type: %s
 inode: %d  generation: %d
  mode: %04o (%s)
 links: %d
 owner: uid %d, gid %d
  size: %d
 alloc: %d bytes
access: %s
modify: %s
change: %s
 birth: %s
`, p, typeName(a.Mode), a.Ino, a.Generation, a.Mode&0o7777, modeString(a.Mode), a.Nlink, a.UID, a.GID,
		a.Size, a.Blocks, lt(a.Atime), lt(a.Mtime), lt(a.Ctime), lt(a.Btime))
	return err
}

func newMkdirCommand() *cobra.Command {
	var cf clientFlags
	var parents bool
	var mode string
	c := &cobra.Command{
		Use:   "mkdir [-p] PATH...",
		Short: "Make directories",
		Long: `Make a directory at each PATH. Its parent must exist, and PATH must not,
unless -p: then missing parents are made too, and a directory that exists
already is no error.` + clientLong,
		Example: `  ustore mkdir /data
  ustore mkdir -p /backups/2026/11`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			perm, err := strconv.ParseUint(mode, 8, 32)
			if err != nil || perm > 0o7777 {
				return usageError{fmt.Errorf("--mode %q: want octal permission bits, such as 0755", mode)}
			}
			return cf.run(cmd, func(s *session) error {
				mkdir := s.mkdir
				if parents {
					mkdir = s.mkdirAll
				}
				for _, a := range args {
					if err := mkdir(storePath(a), uint32(perm)); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	c.ValidArgsFunction = completeArgs(&cf, true, argStore)
	cf.add(c)
	c.Flags().BoolVarP(&parents, "parents", "p", false, "make missing parents; no error if the directory exists")
	c.Flags().StringVarP(&mode, "mode", "m", "0755", "permission bits (octal)")
	return c
}

func (s *session) mkdir(p string, perm uint32) error {
	dir, name, err := s.parent("mkdir", p)
	var oe *opError
	if errors.Is(err, fs.ErrNotExist) && errors.As(err, &oe) {
		// Name the directory asked for, as mkdir(1) does, not the
		// missing parent, and say what makes it.
		return &opError{op: "mkdir", path: p, err: oe.err, timeout: oe.timeout, hint: "use -p to make missing parents"}
	}
	if err != nil {
		return err
	}
	_, err = s.c.Mkdir(s.ctx, dir.Ino, name, perm)
	return s.fail("mkdir", p, err)
}

// mkdirAll makes p and its missing parents, one name at a time from the
// root.
func (s *session) mkdirAll(p string, perm uint32) error {
	cur := proto.Attr{Ino: client.RootIno, Mode: syscall.S_IFDIR}
	at := ""
	for _, name := range splitPath(p) {
		at += "/" + name
		a, err := s.c.Lookup(s.ctx, cur.Ino, name)
		if errors.Is(err, fs.ErrNotExist) {
			a, err = s.c.Mkdir(s.ctx, cur.Ino, name, perm)
			if errors.Is(err, fs.ErrExist) { // made meanwhile
				a, err = s.c.Lookup(s.ctx, cur.Ino, name)
			}
		}
		if err != nil {
			return s.fail("mkdir", at, err)
		}
		if !a.IsDir() {
			return s.fail("mkdir", at, syscall.ENOTDIR)
		}
		cur = a
	}
	return nil
}

// splitPath is a clean absolute path's names.
func splitPath(p string) []string {
	var names []string
	for p != "/" {
		names = append([]string{path.Base(p)}, names...)
		p = path.Dir(p)
	}
	return names
}

func newRmCommand() *cobra.Command {
	var cf clientFlags
	var recursive, force bool
	c := &cobra.Command{
		Use:   "rm [-r] PATH...",
		Short: "Remove files, and with -r directories and what they hold",
		Long: `Remove the file at each PATH. A directory is removed only with -r
(recursive): what it holds first, depth first, then the directory itself; an
empty directory needs -r too. With -f a PATH that does not exist is no error.
The root directory is never removed.` + clientLong,
		Example: `  ustore rm /greeting
  ustore rm -r /backups/2025`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cf.run(cmd, func(s *session) error {
				for _, arg := range args {
					p := storePath(arg)
					err := s.rm(p, recursive)
					if force && errors.Is(err, fs.ErrNotExist) {
						continue
					}
					if err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	c.ValidArgsFunction = completeArgs(&cf, true, argStore)
	cf.add(c)
	c.Flags().BoolVarP(&recursive, "recursive", "r", false, "remove directories and what they hold")
	c.Flags().BoolVarP(&force, "force", "f", false, "no error for a PATH that does not exist")
	return c
}

func (s *session) rm(p string, recursive bool) error {
	if p == "/" {
		return &opError{op: "rm", path: p, err: errors.New("the root directory cannot be removed")}
	}
	dir, name, err := s.parent("rm", p)
	if err != nil {
		return err
	}
	a, err := s.c.Lookup(s.ctx, dir.Ino, name)
	if err != nil {
		return s.fail("rm", p, err)
	}
	if !a.IsDir() {
		return s.fail("rm", p, s.c.Unlink(s.ctx, dir.Ino, name))
	}
	if !recursive {
		return &opError{op: "rm", path: p, err: syscall.EISDIR, hint: "use -r to remove a directory and what it holds"}
	}
	if err := s.removeContents(p, a.Ino); err != nil {
		return err
	}
	return s.fail("rm", p, s.c.Rmdir(s.ctx, dir.Ino, name))
}

// removeContents empties directory ino (at p), depth first: it lists from
// the start again after each page, since what it listed is gone.
func (s *session) removeContents(p string, ino uint64) error {
	for {
		es, err := s.c.ReadDir(s.ctx, ino, 0, proto.ReadDirEntriesMax)
		if err != nil {
			return s.fail("rm", p, err)
		}
		if len(es) == 0 {
			return nil
		}
		// Subdirectories one at a time (each is a walk of its own), files
		// pipelined.
		var files []proto.DirEntry
		for _, e := range es {
			if e.Type != dtDir {
				files = append(files, e)
				continue
			}
			sub := path.Join(p, e.Name)
			if err := s.removeContents(sub, e.Ino); err != nil {
				return err
			}
			if err := s.c.Rmdir(s.ctx, ino, e.Name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return s.fail("rm", sub, err)
			}
		}
		err = forEach(statParallel, files, func(_ int, e proto.DirEntry) error {
			err := s.c.Unlink(s.ctx, ino, e.Name)
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return s.fail("rm", path.Join(p, e.Name), err)
		})
		if err != nil {
			return err
		}
	}
}

func newMvCommand() *cobra.Command {
	var cf clientFlags
	var noTarget, noReplace, exchange bool
	c := &cobra.Command{
		Use:   "mv SRC DST",
		Short: "Move or rename a file or directory",
		Long: `Move SRC to DST, in one atomic rename. If DST is an existing directory,
SRC goes into it under its own name (unless -T); otherwise SRC is renamed to
DST, replacing what DST named: a file, or an empty directory when SRC is a
directory (as rename(2)).

--no-replace never replaces: if the name exists, mv fails with "file exists"
and nothing changes (renameat2's RENAME_NOREPLACE; the check and the rename
are one step, so no other client can create the name in between).
--exchange swaps SRC and DST, which must both exist, atomically: each name
then names what the other did, a file or a directory either of them
(RENAME_EXCHANGE; DST is taken as a name, as with -T).` + clientLong,
		Example: `  ustore mv /draft /final
  ustore mv /final /archive/           # becomes /archive/final
  ustore mv --no-replace /new /final   # fails if /final exists
  ustore mv --exchange /current /next  # swap them`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if noReplace && exchange {
				return usageError{errors.New("--no-replace and --exchange exclude each other")}
			}
			var flags uint32
			switch {
			case noReplace:
				flags = proto.RenameNoReplace
			case exchange:
				flags, noTarget = proto.RenameExchange, true
			}
			src, dst := storePath(args[0]), storePath(args[1])
			return cf.run(cmd, func(s *session) error { return s.mv(src, dst, noTarget, flags) })
		},
	}
	c.ValidArgsFunction = completeArgs(&cf, false, argStore, argStore)
	cf.add(c)
	c.Flags().BoolVarP(&noTarget, "no-target-directory", "T", false, "treat DST as a name even if it is a directory")
	c.Flags().BoolVar(&noReplace, "no-replace", false, "fail if DST exists instead of replacing it")
	c.Flags().BoolVar(&exchange, "exchange", false, "swap SRC and DST atomically (both must exist)")
	return c
}

// errMoveIntoItself is mv of a directory to a path under itself.
var errMoveIntoItself = errors.New("cannot move a directory into a subdirectory of itself")

// mv renames src to dst, or into dst if dst is a directory (unless
// noTarget), with renameat2's flags (0: a plain rename).
func (s *session) mv(src, dst string, noTarget bool, flags uint32) error {
	sdir, sname, err := s.parent("mv", src)
	if err != nil {
		return err
	}
	sa, err := s.c.Lookup(s.ctx, sdir.Ino, sname)
	if err != nil {
		return s.fail("mv", src, err)
	}
	if !noTarget && dst != src {
		if a, err := s.c.Resolve(s.ctx, dst); err == nil && a.IsDir() {
			dst = path.Join(dst, sname)
		}
	}
	// The server answers EINVAL, as rename(2); say why, as mv(1) does.
	// (Paths are clean and there are no symbolic links: a directory's
	// subdirectories are exactly the paths under it.)
	if sa.IsDir() && strings.HasPrefix(dst, src+"/") {
		return &opError{op: "mv", path: src + " to " + dst, err: errMoveIntoItself}
	}
	ddir, dname, err := s.parent("mv", dst)
	if err != nil {
		return err
	}
	if flags == 0 {
		err = s.c.Rename(s.ctx, sdir.Ino, sname, ddir.Ino, dname)
	} else {
		err = s.c.Rename2(s.ctx, sdir.Ino, sname, ddir.Ino, dname, flags)
	}
	return s.fail("mv", src+" to "+dst, err)
}

// dfJSON is df --json's output, in bytes.
type dfJSON struct {
	Size      uint64 `json:"size"`
	Used      uint64 `json:"used"`
	Avail     uint64 `json:"avail"`
	Dirty     int64  `json:"dirty"`
	BlockSize uint32 `json:"block_size"`
}

func newDfCommand() *cobra.Command {
	var cf clientFlags
	var human, asJSON bool
	c := &cobra.Command{
		Use:   "df",
		Short: "Show the store's space: size, used, available, dirty",
		Long: `Show the store's space, in bytes (-h: in K, M, G, T, powers of 1024):
  size   the device
  used   taken by metadata and file data
  avail  what new data may still take (the free space less a reserve kept
         for metadata)
  use%   used / (used + avail), rounded up, as df(1)
  dirty  file data written but not yet written back (buffered in the server)` + clientLong,
		Example: `  ustore df -h
  ustore df --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cf.run(cmd, func(s *session) error {
				f, err := s.c.StatFS(s.ctx)
				if err != nil {
					return s.failStore("df", err)
				}
				return printDf(cmd.OutOrStdout(), f, human, asJSON)
			})
		},
	}
	c.ValidArgsFunction = cobra.NoFileCompletions
	cf.add(c)
	// -h is human-readable, as df's: --help keeps only its long name.
	c.Flags().Bool("help", false, "help for df")
	c.Flags().BoolVarP(&human, "human-readable", "h", false, "sizes in K, M, G, T (powers of 1024)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON (bytes)")
	return c
}

// printDf prints df's output for f: a table (sizes in bytes, or human
// with -h), or JSON.
func printDf(out io.Writer, f proto.StatFSReply, human, asJSON bool) error {
	bs := uint64(f.BlockSize)
	d := dfJSON{Size: f.Blocks * bs, Used: (f.Blocks - min(f.BlocksFree, f.Blocks)) * bs,
		Avail: f.BlocksAvail * bs, Dirty: f.DirtyBytes, BlockSize: f.BlockSize}
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	}
	num := func(v uint64) string {
		if human {
			return humanBytes(v)
		}
		return strconv.FormatUint(v, 10)
	}
	pct := "-"
	if t := d.Used + d.Avail; t > 0 {
		pct = strconv.FormatUint((d.Used*100+t-1)/t, 10) + "%"
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "Size\tUsed\tAvail\tUse%\tDirty\t")
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", num(d.Size), num(d.Used), num(d.Avail), pct, num(uint64(max(d.Dirty, 0))))
	return tw.Flush()
}

// humanBytes is v in the largest unit of 1024 that keeps it ≥ 1, as df -h:
// one decimal under 10, none above ("4.0K", "512M", "1.5G").
func humanBytes(v uint64) string {
	const units = "KMGTPE"
	if v < 1024 {
		return strconv.FormatUint(v, 10)
	}
	f := float64(v)
	i := -1
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if f < 10 {
		return fmt.Sprintf("%.1f%c", f, units[i])
	}
	return fmt.Sprintf("%.0f%c", f, units[i])
}
