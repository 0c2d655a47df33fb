package fusefs_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"ustore/fusefs"
)

// The POSIX behaviour suite: each scenario makes the same calls on the
// mount and on a directory of the kernel's own filesystem (t.TempDir():
// ext4 or tmpfs), and records each call's outcome — ok or the errno, and
// the values read back — in a transcript. The two transcripts must be
// equal: the mount behaves as Linux does, errno for errno.
//
// What differs by design is left out of the transcripts: a directory's
// link count (the store counts as btrfs does: 1), inode numbers, times
// the calls did not set, st_blocks, and a directory's size (ext4 counts
// blocks, tmpfs entries, the store names as btrfs).

// transcript records a scenario's outcomes against one root directory.
type transcript struct {
	root  string
	lines []string
}

func (r *transcript) path(name string) string { return filepath.Join(r.root, name) }

// do records a call's outcome: "what: ok" or "what: ENOENT".
func (r *transcript) do(what string, err error) {
	r.lines = append(r.lines, what+": "+errnoName(err))
}

// val records a value read back.
func (r *transcript) val(what string, v any) {
	r.lines = append(r.lines, fmt.Sprintf("%s = %v", what, v))
}

func errnoName(err error) string {
	if err == nil {
		return "ok"
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return unix.ErrnoName(e)
	}
	return err.Error()
}

// stat records what stat says of name: the type, permission bits, size,
// and the link count of a file.
func (r *transcript) stat(name string) {
	var st unix.Stat_t
	err := unix.Stat(r.path(name), &st)
	if err != nil {
		r.do("stat "+name, err)
		return
	}
	nlink, size := fmt.Sprint(st.Nlink), fmt.Sprint(st.Size)
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		nlink, size = "-", "-"
	}
	r.val("stat "+name, fmt.Sprintf("type=%o perm=%o size=%s nlink=%s", st.Mode&unix.S_IFMT, st.Mode&07777, size, nlink))
}

// lstat records what lstat says of name: stat's fields, of a symbolic
// link itself.
func (r *transcript) lstat(name string) {
	var st unix.Stat_t
	if err := unix.Lstat(r.path(name), &st); err != nil {
		r.do("lstat "+name, err)
		return
	}
	size := fmt.Sprint(st.Size)
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		size = "-"
	}
	r.val("lstat "+name, fmt.Sprintf("type=%o perm=%o size=%s nlink=%d", st.Mode&unix.S_IFMT, st.Mode&07777, size, st.Nlink))
}

// readlink records a symbolic link's target.
func (r *transcript) readlink(name string) {
	target, err := os.Readlink(r.path(name))
	if err != nil {
		r.do("readlink "+name, err)
		return
	}
	r.val("readlink "+name, fmt.Sprintf("%q", target))
}

// open records an open's outcome, closing what it opened.
func (r *transcript) open(name string, flags int) {
	fd, err := unix.Open(r.path(name), flags, 0)
	r.do(fmt.Sprintf("open %s %#o", name, flags), err)
	if err == nil {
		unix.Close(fd)
	}
}

// read records a file's content (or why it cannot be read).
func (r *transcript) read(name string) {
	b, err := os.ReadFile(r.path(name))
	if err != nil {
		r.do("read "+name, err)
		return
	}
	r.val("read "+name, fmt.Sprintf("%q", b))
}

// list records a directory's names, sorted.
func (r *transcript) list(name string) {
	es, err := os.ReadDir(r.path(name))
	if err != nil {
		r.do("readdir "+name, err)
		return
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	r.val("readdir "+name, names)
}

func (r *transcript) write(name, data string, flags int) {
	f, err := os.OpenFile(r.path(name), flags, 0o644)
	if err != nil {
		r.do(fmt.Sprintf("open %s %#o", name, flags), err)
		return
	}
	_, err = f.WriteString(data)
	r.do("write "+name, err)
	r.do("close "+name, f.Close())
}

// getxattr records attribute name of file name read into a buffer of size
// bytes (0: the size alone), or why it cannot be.
func (r *transcript) getxattr(name, attr string, size int) {
	what := fmt.Sprintf("getxattr %s %s [%d]", name, attr, size)
	var buf []byte
	if size > 0 {
		buf = make([]byte, size)
	}
	n, err := unix.Getxattr(r.path(name), attr, buf)
	switch {
	case err != nil:
		r.do(what, err)
	case size == 0:
		r.val(what, n)
	default:
		r.val(what, fmt.Sprintf("%q", buf[:n]))
	}
}

// listxattr records the attribute names of name listed into a buffer of
// size bytes (0: the list's size alone), sorted: the order is the
// filesystem's own.
func (r *transcript) listxattr(name string, size int) {
	what := fmt.Sprintf("listxattr %s [%d]", name, size)
	var buf []byte
	if size > 0 {
		buf = make([]byte, size)
	}
	n, err := unix.Listxattr(r.path(name), buf)
	switch {
	case err != nil:
		r.do(what, err)
	case size == 0:
		r.val(what, n)
	default:
		names := strings.Split(strings.TrimSuffix(string(buf[:n]), "\x00"), "\x00")
		if n == 0 {
			names = nil
		}
		slices.Sort(names)
		r.val(what, fmt.Sprintf("%q", names))
	}
}

// scenarios are the suite: each a list of calls, named.
var scenarios = []struct {
	name string
	run  func(r *transcript)
}{
	{"open_flags", func(r *transcript) {
		_, err := unix.Open(r.path("missing"), unix.O_RDONLY, 0)
		r.do("open missing", err)
		fd, err := unix.Open(r.path("f"), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o640)
		r.do("open f O_CREAT|O_EXCL", err)
		if err == nil {
			unix.Close(fd)
		}
		_, err = unix.Open(r.path("f"), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o640)
		r.do("open f O_CREAT|O_EXCL again", err)
		r.write("f", "hello world", os.O_WRONLY|os.O_CREATE)
		r.read("f")
		r.write("f", "bye", os.O_WRONLY|os.O_TRUNC)
		r.read("f")
		r.write("f", "+1", os.O_WRONLY|os.O_APPEND)
		r.write("f", "+2", os.O_RDWR|os.O_APPEND)
		r.read("f")
		r.stat("f")
		r.do("mkdir d", os.Mkdir(r.path("d"), 0o755))
		_, err = unix.Open(r.path("d"), unix.O_WRONLY, 0)
		r.do("open d O_WRONLY", err)
		_, err = unix.Open(r.path("d"), unix.O_RDWR|unix.O_CREAT, 0o644)
		r.do("open d O_CREAT", err)
		_, err = unix.Open(r.path("f/x"), unix.O_RDONLY, 0)
		r.do("open f/x", err)
		_, err = unix.Open(r.path("f"), unix.O_RDONLY|unix.O_DIRECTORY, 0)
		r.do("open f O_DIRECTORY", err)
		_, err = unix.Open(r.path("missing/x"), unix.O_CREAT|unix.O_WRONLY, 0o644)
		r.do("open missing/x O_CREAT", err)
		_, err = unix.Open(r.path(strings.Repeat("n", 256)), unix.O_CREAT|unix.O_WRONLY, 0o644)
		r.do("open 256-byte name", err)
		fd, err = unix.Open(r.path(strings.Repeat("n", 255)), unix.O_CREAT|unix.O_WRONLY, 0o644)
		r.do("open 255-byte name", err)
		if err == nil {
			unix.Close(fd)
		}
	}},
	{"read_write_sparse", func(r *transcript) {
		f, err := os.OpenFile(r.path("s"), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			r.do("open s", err)
			return
		}
		defer f.Close()
		_, err = f.WriteAt([]byte("tail"), 3<<20+5)
		r.do("pwrite s at 3 MiB+5", err)
		r.stat("s")
		buf := make([]byte, 8)
		n, err := f.ReadAt(buf, 1<<20)
		r.do("pread s hole", err)
		r.val("hole", fmt.Sprintf("%d %v", n, buf[:n]))
		n, _ = f.ReadAt(buf, 3<<20+3)
		r.val("pread s across the data", fmt.Sprintf("%d %q", n, buf[:n]))
		n, err = f.ReadAt(buf, 4<<20)
		r.val("pread s past the end", fmt.Sprintf("%d %v", n, err))
		r.do("ftruncate s 2", f.Truncate(2))
		r.stat("s")
		r.do("ftruncate s 10000", f.Truncate(10000))
		r.stat("s")
		n, _ = f.ReadAt(buf, 9996)
		r.val("pread s after extend", fmt.Sprintf("%d %v", n, buf[:n]))
		// Past 4 GiB, sparse: offsets do not wrap at 32 bits anywhere.
		_, err = f.WriteAt([]byte("far"), 5<<30+1)
		r.do("pwrite s at 5 GiB+1", err)
		r.stat("s")
		n, _ = f.ReadAt(buf, 5<<30-2)
		r.val("pread s across 5 GiB", fmt.Sprintf("%d %q", n, buf[:n]))
		n, _ = f.ReadAt(buf, 4<<30)
		r.val("pread s at 4 GiB (a hole)", fmt.Sprintf("%d %v", n, buf[:n]))
		r.do("ftruncate s 10000 again", f.Truncate(10000))
		r.do("fsync s", f.Sync())
		r.do("fdatasync s", unix.Fdatasync(int(f.Fd())))
		r.do("truncate s 5", os.Truncate(r.path("s"), 5))
		r.stat("s")
		r.do("mkdir d", os.Mkdir(r.path("d"), 0o755))
		r.do("truncate d", os.Truncate(r.path("d"), 0))
		// One large write, across the store's 1 MiB request size.
		big := bytes.Repeat([]byte("0123456789abcdef"), 200_000)
		r.do("write big", os.WriteFile(r.path("big"), big, 0o644))
		got, err := os.ReadFile(r.path("big"))
		r.do("read big", err)
		r.val("big intact", bytes.Equal(got, big))
	}},
	{"directories", func(r *transcript) {
		r.do("mkdir a", os.Mkdir(r.path("a"), 0o750))
		r.stat("a")
		r.do("mkdir a again", os.Mkdir(r.path("a"), 0o750))
		r.do("mkdir missing/b", os.Mkdir(r.path("missing/b"), 0o755))
		r.write("a/f", "x", os.O_WRONLY|os.O_CREATE)
		r.do("mkdir a/f/g", os.Mkdir(r.path("a/f/g"), 0o755))
		r.do("rmdir a (not empty)", unix.Rmdir(r.path("a")))
		r.do("rmdir a/f (a file)", unix.Rmdir(r.path("a/f")))
		r.do("unlink a (a directory)", unix.Unlink(r.path("a")))
		r.do("rmdir missing", unix.Rmdir(r.path("missing")))
		r.do("unlink missing", unix.Unlink(r.path("missing")))
		r.do("rmdir a/.", unix.Rmdir(r.path("a")+"/."))
		for i := range 300 {
			r.do("", os.WriteFile(r.path(fmt.Sprintf("a/n%03d", i)), nil, 0o644))
		}
		r.list("a")
		r.do("unlink a/f", unix.Unlink(r.path("a/f")))
		for i := range 300 {
			r.do("", os.Remove(r.path(fmt.Sprintf("a/n%03d", i))))
		}
		r.list("a")
		r.do("rmdir a", unix.Rmdir(r.path("a")))
		r.list("")
		f, err := os.Open(r.root)
		if err == nil {
			r.do("fsync of a directory", f.Sync())
			f.Close()
		}
	}},
	{"rename", func(r *transcript) {
		r.write("f", "one", os.O_WRONLY|os.O_CREATE)
		r.write("g", "two", os.O_WRONLY|os.O_CREATE)
		r.do("rename f g", os.Rename(r.path("f"), r.path("g")))
		r.read("g")
		r.stat("f")
		r.do("rename g g", os.Rename(r.path("g"), r.path("g")))
		r.do("rename missing h", os.Rename(r.path("missing"), r.path("h")))
		r.do("mkdir d", os.Mkdir(r.path("d"), 0o755))
		r.do("mkdir e", os.Mkdir(r.path("e"), 0o755))
		r.do("rename g d (file over directory)", os.Rename(r.path("g"), r.path("d")))
		r.do("rename d g (directory over file)", os.Rename(r.path("d"), r.path("g")))
		r.do("rename d e (over an empty directory)", os.Rename(r.path("d"), r.path("e")))
		r.stat("d")
		r.do("mkdir d2", os.Mkdir(r.path("d2"), 0o755))
		r.write("d2/x", "x", os.O_WRONLY|os.O_CREATE)
		r.do("rename e d2 (over a non-empty directory)", os.Rename(r.path("e"), r.path("d2")))
		r.do("rename d2 d2/sub (into itself)", os.Rename(r.path("d2"), r.path("d2/sub")))
		r.do("rename g d2/moved (across directories)", os.Rename(r.path("g"), r.path("d2/moved")))
		r.read("d2/moved")
		r.list("d2")
		r.list("")
	}},
	{"links", func(r *transcript) {
		r.write("f", "shared", os.O_WRONLY|os.O_CREATE)
		r.do("mkdir d", os.Mkdir(r.path("d"), 0o755))
		r.do("link f d/g", os.Link(r.path("f"), r.path("d/g")))
		r.stat("f")
		r.stat("d/g")
		r.write("d/g", "+more", os.O_WRONLY|os.O_APPEND)
		r.read("f")
		r.do("link f d/g again", os.Link(r.path("f"), r.path("d/g")))
		r.do("link d d2 (a directory)", os.Link(r.path("d"), r.path("d2")))
		r.do("link missing x", os.Link(r.path("missing"), r.path("x")))
		r.do("unlink f", unix.Unlink(r.path("f")))
		r.stat("d/g")
		r.read("d/g")
		r.do("rename d/g f (back)", os.Rename(r.path("d/g"), r.path("f")))
		r.do("link f f2", os.Link(r.path("f"), r.path("f2")))
		r.do("rename f f2 (two names of one inode)", os.Rename(r.path("f"), r.path("f2")))
		r.stat("f")
		r.stat("f2")
	}},
	{"symlinks", func(r *transcript) {
		r.write("f", "target data", os.O_WRONLY|os.O_CREATE)
		r.do("mkdir d", os.Mkdir(r.path("d"), 0o755))
		r.do("symlink f l", os.Symlink("f", r.path("l")))
		r.do("symlink ../f d/up", os.Symlink("../f", r.path("d/up")))
		r.do("symlink d dl", os.Symlink("d", r.path("dl")))
		r.do("symlink no/such dangling", os.Symlink("no/such", r.path("dangling")))
		r.do("symlink over an existing name", os.Symlink("x", r.path("l")))
		r.do("symlink empty target", unix.Symlink("", r.path("e")))
		r.do("symlink in a missing directory", os.Symlink("f", r.path("missing/l")))
		r.do("symlink of a 4037-byte target", os.Symlink(strings.Repeat("t", 4037), r.path("long")))
		r.do("symlink of a 4096-byte target", os.Symlink(strings.Repeat("t", 4096), r.path("toolong")))
		r.readlink("l")
		r.readlink("d/up")
		r.readlink("dangling")
		r.readlink("long")
		r.readlink("f")
		r.readlink("d")
		r.readlink("missing")
		// lstat is the link; stat and open follow it.
		r.lstat("l")
		r.stat("l")
		r.lstat("dangling")
		r.stat("dangling")
		r.lstat("dl")
		r.stat("dl")
		r.read("l")
		r.read("d/up")
		r.read("dl/up") // through two links
		r.read("dangling")
		r.write("l", "+via the link", os.O_WRONLY|os.O_APPEND)
		r.read("f")
		r.list("dl")
		r.open("l", unix.O_RDONLY|unix.O_NOFOLLOW)
		r.open("dl", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW)
		r.open("dangling", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL)
		// A loop: the kernel gives up on it.
		r.do("symlink b a", os.Symlink("b", r.path("a")))
		r.do("symlink a b", os.Symlink("a", r.path("b")))
		r.open("a", unix.O_RDONLY)
		r.stat("a")
		r.lstat("a")
		r.do("mkdir a/x (through the loop)", os.Mkdir(r.path("a/x"), 0o755))
		// A hard link of a link (linkat without AT_SYMLINK_FOLLOW), a
		// rename, an unlink: as a file's.
		r.do("link l hl", unix.Linkat(unix.AT_FDCWD, r.path("l"), unix.AT_FDCWD, r.path("hl"), 0))
		r.lstat("hl")
		r.readlink("hl")
		r.do("rename l d/l2", os.Rename(r.path("l"), r.path("d/l2")))
		r.readlink("d/l2")
		r.read("d/l2") // now relative to d: dangling
		r.do("rename dangling over d/l2", os.Rename(r.path("dangling"), r.path("d/l2")))
		r.readlink("d/l2")
		r.do("rename dl over d (a link over a directory)", os.Rename(r.path("dl"), r.path("d")))
		r.do("rmdir dl (a link to a directory)", unix.Rmdir(r.path("dl")))
		r.do("unlink dl", unix.Unlink(r.path("dl")))
		r.do("unlink hl", unix.Unlink(r.path("hl")))
		r.lstat("hl")
		r.do("lchown d/l2", os.Lchown(r.path("d/l2"), os.Getuid(), os.Getgid()))
		r.lstat("d/l2")
		var es []string
		if ents, err := os.ReadDir(r.root); err == nil {
			for _, e := range ents {
				es = append(es, e.Name()+" "+e.Type().String())
			}
		}
		slices.Sort(es)
		r.val("readdir types", es)
	}},
	{"unlink_while_open", func(r *transcript) {
		r.write("f", "first", os.O_WRONLY|os.O_CREATE)
		f, err := os.OpenFile(r.path("f"), os.O_RDWR, 0)
		if err != nil {
			r.do("open f", err)
			return
		}
		r.do("unlink f", os.Remove(r.path("f")))
		var st unix.Stat_t
		r.do("fstat f", unix.Fstat(int(f.Fd()), &st))
		r.val("nlink size", fmt.Sprint(st.Nlink, st.Size))
		_, err = f.WriteAt([]byte("+after"), 5)
		r.do("pwrite unlinked f", err)
		buf := make([]byte, 32)
		n, err := f.ReadAt(buf, 0)
		r.val("pread unlinked f", fmt.Sprintf("%q %v", buf[:n], err))
		r.do("fsync unlinked f", f.Sync())
		r.list("")
		r.do("close f", f.Close())
		// Renamed over while open: the old content stays readable.
		r.write("g", "old", os.O_WRONLY|os.O_CREATE)
		r.write("h", "new", os.O_WRONLY|os.O_CREATE)
		g, err := os.Open(r.path("g"))
		if err != nil {
			r.do("open g", err)
			return
		}
		r.do("rename h g", os.Rename(r.path("h"), r.path("g")))
		n, err = g.ReadAt(buf, 0)
		r.val("pread replaced g", fmt.Sprintf("%q %v", buf[:n], err))
		r.do("close g", g.Close())
		r.read("g")
		r.list("")
	}},
	{"renameat2", func(r *transcript) {
		r.write("f", "eff", os.O_WRONLY|os.O_CREATE)
		r.write("g", "gee", os.O_WRONLY|os.O_CREATE)
		r.do("mkdir d", os.Mkdir(r.path("d"), 0o755))
		r.write("d/x", "ex", os.O_WRONLY|os.O_CREATE)
		rename2 := func(what, from, to string, flags uint) {
			r.do(what, unix.Renameat2(unix.AT_FDCWD, r.path(from), unix.AT_FDCWD, r.path(to), flags))
		}
		rename2("noreplace f g", "f", "g", unix.RENAME_NOREPLACE)
		rename2("noreplace f d", "f", "d", unix.RENAME_NOREPLACE)
		rename2("noreplace f f", "f", "f", unix.RENAME_NOREPLACE)
		rename2("noreplace missing h", "missing", "h", unix.RENAME_NOREPLACE)
		rename2("noreplace f h", "f", "h", unix.RENAME_NOREPLACE)
		r.list("")
		r.read("h")
		rename2("exchange h g", "h", "g", unix.RENAME_EXCHANGE)
		r.read("h")
		r.read("g")
		rename2("exchange g d", "g", "d", unix.RENAME_EXCHANGE)
		r.stat("g")
		r.stat("d")
		r.read("g/x")
		r.read("d")
		rename2("exchange d/missing g", "d/missing", "g", unix.RENAME_EXCHANGE)
		rename2("exchange h missing", "h", "missing", unix.RENAME_EXCHANGE)
		rename2("exchange g g/x (into itself)", "g", "g/x", unix.RENAME_EXCHANGE)
		rename2("exchange g/x g (into itself)", "g/x", "g", unix.RENAME_EXCHANGE)
		rename2("exchange|noreplace h d", "h", "d", unix.RENAME_EXCHANGE|unix.RENAME_NOREPLACE)
		r.do("mkdir e", os.Mkdir(r.path("e"), 0o755))
		r.write("e/y", "why", os.O_WRONLY|os.O_CREATE)
		rename2("exchange g/x e (a file and a dir across dirs)", "g/x", "e", unix.RENAME_EXCHANGE)
		r.stat("g/x")
		r.read("g/x/y")
		r.read("e")
		r.list("g")
		r.list("")
		rename2("exchange g/x g (a dir with its parent)", "g/x", "g", unix.RENAME_EXCHANGE)
	}},
	{"fallocate", func(r *transcript) {
		r.write("f", "hello", os.O_WRONLY|os.O_CREATE)
		fd, err := unix.Open(r.path("f"), unix.O_RDWR, 0)
		r.do("open f", err)
		if err != nil {
			return
		}
		defer unix.Close(fd)
		falloc := func(what string, mode uint32, off, n int64) {
			r.do(what, unix.Fallocate(fd, mode, off, n))
			r.stat("f")
		}
		falloc("fallocate 0 100+10000 (grows)", 0, 100, 10000)
		r.read("f")
		falloc("fallocate keep-size 0+1M", unix.FALLOC_FL_KEEP_SIZE, 0, 1<<20)
		falloc("fallocate 0 0+10 (inside)", 0, 0, 10)
		falloc("punch 1+3", unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 1, 3)
		falloc("punch 4000+5000", unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 4000, 5000)
		falloc("punch past the end", unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 20000, 10)
		r.read("f")
		falloc("punch without keep-size", unix.FALLOC_FL_PUNCH_HOLE, 0, 10)
		falloc("fallocate length 0", 0, 0, 0)
		falloc("fallocate negative offset", 0, -1, 10)
		falloc("fallocate negative length", 0, 0, -10)
		// Whole blocks of a new file: both count them alike.
		r.write("b", "", os.O_WRONLY|os.O_CREATE)
		bfd, err := unix.Open(r.path("b"), unix.O_RDWR, 0)
		r.do("open b", err)
		if err != nil {
			return
		}
		defer unix.Close(bfd)
		blocks := func(what string) {
			var st unix.Stat_t
			r.do("fstat b", unix.Fstat(bfd, &st))
			r.val(what, fmt.Sprintf("size=%d blocks=%d", st.Size, st.Blocks))
		}
		r.do("fallocate b 0+64k", unix.Fallocate(bfd, 0, 0, 64<<10))
		blocks("after fallocate")
		r.do("punch b 4k+8k", unix.Fallocate(bfd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 4<<10, 8<<10))
		blocks("after punch")
		r.read("b")
		_, err = unix.Pwrite(bfd, []byte("data"), 5<<10)
		r.do("pwrite into the hole", err)
		r.read("b")
	}},
	{"attributes", func(r *transcript) {
		r.write("f", "abc", os.O_WRONLY|os.O_CREATE)
		r.do("chmod f 0600", os.Chmod(r.path("f"), 0o600))
		r.stat("f")
		r.do("chmod f 04755", os.Chmod(r.path("f"), 0o4755))
		r.stat("f")
		r.do("chmod f 0000", os.Chmod(r.path("f"), 0))
		r.stat("f")
		r.do("chown f 1000:1000", os.Chown(r.path("f"), 1000, 1000))
		var st unix.Stat_t
		if unix.Stat(r.path("f"), &st) == nil {
			r.val("owner", fmt.Sprint(st.Uid, st.Gid))
		}
		ts := []unix.Timespec{{Sec: 1_000_000_000, Nsec: 5}, {Sec: 1_200_000_000, Nsec: 7}}
		r.do("utimensat f", unix.UtimesNanoAt(unix.AT_FDCWD, r.path("f"), ts, 0))
		if unix.Stat(r.path("f"), &st) == nil {
			r.val("atime mtime", fmt.Sprint(st.Atim, st.Mtim))
		}
		omit := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Sec: 1_300_000_000}}
		r.do("utimensat f UTIME_OMIT atime", unix.UtimesNanoAt(unix.AT_FDCWD, r.path("f"), omit, 0))
		if unix.Stat(r.path("f"), &st) == nil {
			r.val("atime mtime", fmt.Sprint(st.Atim, st.Mtim))
		}
		now := []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_OMIT}}
		r.do("utimensat f UTIME_NOW atime", unix.UtimesNanoAt(unix.AT_FDCWD, r.path("f"), now, 0))
		if unix.Stat(r.path("f"), &st) == nil {
			r.val("atime moved to now", st.Atim.Sec > 1_300_000_000)
			r.val("mtime kept", st.Mtim.Sec)
		}
		r.do("chmod missing", os.Chmod(r.path("missing"), 0o600))
		r.do("mkdir d 0700", os.Mkdir(r.path("d"), 0o700))
		r.do("chmod d 0711", os.Chmod(r.path("d"), 0o711))
		r.stat("d")
		var sf unix.Statfs_t
		r.do("statfs", unix.Statfs(r.root, &sf))
	}},
	{"xattrs", func(r *transcript) {
		r.write("f", "abc", os.O_WRONLY|os.O_CREATE)
		f := r.path("f")
		r.do("setxattr f user.a", unix.Setxattr(f, "user.a", []byte("value"), 0))
		r.do("setxattr f user.a XATTR_CREATE", unix.Setxattr(f, "user.a", []byte("x"), unix.XATTR_CREATE))
		r.do("setxattr f user.b XATTR_REPLACE", unix.Setxattr(f, "user.b", []byte("x"), unix.XATTR_REPLACE))
		r.do("setxattr f user.b XATTR_CREATE", unix.Setxattr(f, "user.b", []byte("bee"), unix.XATTR_CREATE))
		r.do("setxattr f user.a XATTR_REPLACE", unix.Setxattr(f, "user.a", []byte("again"), unix.XATTR_REPLACE))
		r.do("setxattr f user.empty", unix.Setxattr(f, "user.empty", nil, 0))
		r.getxattr("f", "user.a", 64)
		r.getxattr("f", "user.a", 0)
		r.getxattr("f", "user.a", 2)
		r.getxattr("f", "user.empty", 64)
		r.getxattr("f", "user.missing", 64)
		r.getxattr("f", "security.capability", 64)
		r.getxattr("f", "foo.bar", 64)
		r.listxattr("f", 256)
		r.listxattr("f", 0)
		r.listxattr("f", 5)
		r.do("setxattr f user.", unix.Setxattr(f, "user.", []byte("x"), 0))
		r.do("setxattr f empty name", unix.Setxattr(f, "", []byte("x"), 0))
		r.do("setxattr f foo.bar", unix.Setxattr(f, "foo.bar", []byte("x"), 0))
		r.do("setxattr f name of 256", unix.Setxattr(f, "user."+strings.Repeat("n", 251), []byte("x"), 0))
		r.do("setxattr f name of 255", unix.Setxattr(f, "user."+strings.Repeat("n", 250), []byte("x"), 0))
		r.getxattr("f", "user."+strings.Repeat("n", 250), 64)
		r.do("removexattr f user.a", unix.Removexattr(f, "user.a"))
		r.do("removexattr f user.a again", unix.Removexattr(f, "user.a"))
		r.do("removexattr f foo.bar", unix.Removexattr(f, "foo.bar"))
		r.listxattr("f", 1024)
		r.do("setxattr missing", unix.Setxattr(r.path("missing"), "user.a", nil, 0))
		r.do("mkdir d", os.Mkdir(r.path("d"), 0o755))
		r.do("setxattr d user.d", unix.Setxattr(r.path("d"), "user.d", []byte("dir"), 0))
		r.getxattr("d", "user.d", 64)
		r.listxattr("d", 64)
		// A new file under an old name has none of the old one's.
		r.do("unlink f", os.Remove(f))
		r.write("f", "new", os.O_WRONLY|os.O_CREATE)
		r.listxattr("f", 64)
		// Through an open descriptor: fsetxattr, fgetxattr.
		fd, err := unix.Open(f, unix.O_RDWR, 0)
		r.do("open f", err)
		if err == nil {
			r.do("fsetxattr user.fd", unix.Fsetxattr(fd, "user.fd", []byte("by fd"), 0))
			buf := make([]byte, 16)
			n, err := unix.Fgetxattr(fd, "user.fd", buf)
			r.do("fgetxattr user.fd", err)
			if err == nil {
				r.val("fgetxattr user.fd", fmt.Sprintf("%q", buf[:n]))
			}
			r.do("close f", unix.Close(fd))
		}
	}},
}

// TestMount_POSIX runs every scenario on the mount and on t.TempDir(),
// and compares the transcripts line by line.
func TestMount_POSIX(t *testing.T) {
	mnt := mountStore(t, fusefs.Options{})
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			want := &transcript{root: t.TempDir()}
			got := &transcript{root: filepath.Join(mnt, sc.name)}
			if err := os.Mkdir(got.root, 0o755); err != nil {
				t.Fatal(err)
			}
			sc.run(want)
			sc.run(got)
			if !slices.Equal(got.lines, want.lines) {
				for i := range max(len(got.lines), len(want.lines)) {
					var g, w string
					if i < len(got.lines) {
						g = got.lines[i]
					}
					if i < len(want.lines) {
						w = want.lines[i]
					}
					if g != w {
						t.Errorf("call %d:\n mount: %s\nkernel: %s", i, g, w)
					}
				}
			}
		})
	}
}
