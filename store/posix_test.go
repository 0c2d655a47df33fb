package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"ustore/dev/memdev"
)

// POSIX semantics, operation by operation: every error condition with the
// exact errno (and nothing changed by the failed operation), then the
// success cases whose effects are easy to get subtly wrong. Every case's
// store passes fsck at the end.

// posixFix is the tree every error case starts from:
//
//	/f        file, 5000 bytes
//	/g        file, 10 bytes
//	/d/sub/x  dirs d, sub; file x
//	/e        empty dir
//
// and two deleted inodes: a file (delFile) and a directory (delDir), both
// still in the inode table (their numbers are what a client holding a
// stale handle would send).
type posixFix struct {
	s                  *Store
	dev                *memdev.Device
	f, g, d, sub, x, e Ino
	delFile            Ino
	delDir             Ino
	noSuch             Ino
}

func newPosixFix(t *testing.T) *posixFix {
	t.Helper()
	d := newTestDevice(t, 32<<20)
	s := openTest(t, d, Options{})
	fx := &posixFix{s: s, dev: d}
	mk := func(a Attr, err error) Ino {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return a.Ino
	}
	fx.f = mk(s.Create(RootIno, "f", 0o644))
	posixWrite(t, s, fx.f, 0, posixPattern(5000, 1))
	fx.g = mk(s.Create(RootIno, "g", 0o644))
	posixWrite(t, s, fx.g, 0, []byte("0123456789"))
	fx.d = mk(s.Mkdir(RootIno, "d", 0o755))
	fx.sub = mk(s.Mkdir(fx.d, "sub", 0o755))
	fx.x = mk(s.Create(fx.sub, "x", 0o644))
	fx.e = mk(s.Mkdir(RootIno, "e", 0o755))
	fx.delFile = mk(s.Create(RootIno, "del", 0o644))
	posixWrite(t, s, fx.delFile, 0, posixPattern(9000, 2))
	if err := s.Unlink(RootIno, "del"); err != nil {
		t.Fatal(err)
	}
	fx.delDir = mk(s.Mkdir(RootIno, "deld", 0o755))
	if err := s.Rmdir(RootIno, "deld"); err != nil {
		t.Fatal(err)
	}
	fx.noSuch = 1 << 40
	return fx
}

// posixPattern returns n bytes that differ with seed and position.
func posixPattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31+i/251) ^ seed*97
		if b[i] == 0 {
			b[i] = seed | 1
		}
	}
	return b
}

func posixWrite(t testing.TB, s *Store, ino Ino, off uint64, data []byte) {
	t.Helper()
	n, err := s.Write(ino, off, data)
	if err != nil || n != len(data) {
		t.Fatalf("write ino %d at %d, %d bytes: %d, %v", ino, off, len(data), n, err)
	}
}

// posixReadAll reads file ino whole, and checks that reading at its end
// returns nothing.
func posixReadAll(t testing.TB, s *Store, ino Ino) []byte {
	t.Helper()
	a, err := s.Stat(ino)
	if err != nil {
		t.Fatalf("stat %d: %v", ino, err)
	}
	buf := make([]byte, a.Size+100)
	n, err := s.Read(ino, 0, buf)
	if err != nil || uint64(n) != a.Size {
		t.Fatalf("read ino %d (size %d): %d, %v", ino, a.Size, n, err)
	}
	if n, err := s.Read(ino, a.Size, make([]byte, 10)); n != 0 || err != nil {
		t.Fatalf("read ino %d at its end: %d, %v", ino, n, err)
	}
	return buf[:n]
}

// posixList lists directory dir whole, in pages of page entries.
func posixList(t testing.TB, s *Store, dir Ino, page int) []DirEntry {
	t.Helper()
	var out []DirEntry
	cookie := uint64(0)
	for {
		es, err := s.ReadDir(dir, cookie, page)
		if err != nil {
			t.Fatalf("readdir %d from %d: %v", dir, cookie, err)
		}
		out = append(out, es...)
		if len(es) < page {
			return out
		}
		cookie = es[len(es)-1].Cookie
	}
}

// posixTree describes the whole namespace: every path with its inode,
// type, link count, size and content.
func posixTree(t testing.TB, s *Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(dir Ino, path string)
	walk = func(dir Ino, path string) {
		a, err := s.Stat(dir)
		if err != nil {
			t.Fatalf("stat %s: %v", path, err)
		}
		out[path+"/"] = fmt.Sprintf("ino %d dir nlink %d size %d mode %o", a.Ino, a.Nlink, a.Size, a.Mode)
		for _, e := range posixList(t, s, dir, 3) {
			p := path + "/" + e.Name
			if e.Type == TypeDir {
				walk(e.Ino, p)
				continue
			}
			a, err := s.Stat(e.Ino)
			if err != nil {
				t.Fatalf("stat %s: %v", p, err)
			}
			data := posixReadAll(t, s, e.Ino)
			out[p] = fmt.Sprintf("ino %d file nlink %d size %d mode %o data %x", a.Ino, a.Nlink, a.Size, a.Mode, posixSum(data))
		}
	}
	walk(RootIno, "")
	return out
}

func posixSum(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

func posixDiff(a, b map[string]string) string {
	var d []string
	for k, v := range a {
		if b[k] != v {
			d = append(d, fmt.Sprintf("%s: %q → %q", k, v, b[k]))
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			d = append(d, fmt.Sprintf("%s: new %q", k, v))
		}
	}
	slices.Sort(d)
	return strings.Join(d, "\n")
}

// posixWantErr checks that err is a *fs.PathError for errno want.
func posixWantErr(t testing.TB, what string, err error, want syscall.Errno) {
	t.Helper()
	var pe *fs.PathError
	switch {
	case err == nil:
		t.Fatalf("%s: no error, want %v", what, want)
	case !errors.As(err, &pe):
		t.Fatalf("%s: %v (%T), not a *fs.PathError", what, err, err)
	case !errors.Is(err, want) || ErrnoOf(err) != want:
		t.Fatalf("%s: %v (errno %d), want %v (%d)", what, err, ErrnoOf(err), want, want)
	}
}

type posixErrCase struct {
	name string
	op   func(fx *posixFix) error
	want syscall.Errno
}

func posixErrCases() []posixErrCase {
	ENOENT, EEXIST, ENOTDIR, EISDIR := syscall.ENOENT, syscall.EEXIST, syscall.ENOTDIR, syscall.EISDIR
	ENOTEMPTY, ENAMETOOLONG, EINVAL := syscall.ENOTEMPTY, syscall.ENAMETOOLONG, syscall.EINVAL
	EFBIG, EPERM := syscall.EFBIG, syscall.EPERM
	errOf := func(_ Attr, err error) error { return err }
	errN := func(_ int, err error) error { return err }
	errL := func(_ []DirEntry, err error) error { return err }
	size := func(n uint64) SetAttr { return SetAttr{Size: &n} }
	mode := uint32(0o600)
	cases := []posixErrCase{
		// lookup
		{"lookup/missing name", func(fx *posixFix) error { return errOf(fx.s.Lookup(RootIno, "nope")) }, ENOENT},
		{"lookup/missing name in subdir", func(fx *posixFix) error { return errOf(fx.s.Lookup(fx.e, "f")) }, ENOENT},
		{"lookup/missing parent", func(fx *posixFix) error { return errOf(fx.s.Lookup(fx.noSuch, "f")) }, ENOENT},
		{"lookup/deleted parent", func(fx *posixFix) error { return errOf(fx.s.Lookup(fx.delDir, "f")) }, ENOENT},
		{"lookup/deleted file as parent", func(fx *posixFix) error { return errOf(fx.s.Lookup(fx.delFile, "f")) }, ENOENT},
		{"lookup/parent is a file", func(fx *posixFix) error { return errOf(fx.s.Lookup(fx.f, "f")) }, ENOTDIR},
		{"lookup/unlinked name", func(fx *posixFix) error { return errOf(fx.s.Lookup(RootIno, "del")) }, ENOENT},
		{"resolve/missing", func(fx *posixFix) error { return errOf(fx.s.Resolve("/d/nope")) }, ENOENT},
		{"resolve/through a file", func(fx *posixFix) error { return errOf(fx.s.Resolve("/f/x")) }, ENOTDIR},
		{"resolve/dotdot", func(fx *posixFix) error { return errOf(fx.s.Resolve("/d/..")) }, EINVAL},
		{"resolveparent/root", func(fx *posixFix) error { _, _, err := fx.s.ResolveParent("/"); return err }, EINVAL},
		{"get/dir", func(fx *posixFix) error { _, err := fx.s.Get("/d"); return err }, EISDIR},

		// create
		{"create/over a file", func(fx *posixFix) error { return errOf(fx.s.Create(RootIno, "f", 0o644)) }, EEXIST},
		{"create/over a dir", func(fx *posixFix) error { return errOf(fx.s.Create(RootIno, "d", 0o644)) }, EEXIST},
		{"create/over a file in subdir", func(fx *posixFix) error { return errOf(fx.s.Create(fx.sub, "x", 0o644)) }, EEXIST},
		{"create/missing parent", func(fx *posixFix) error { return errOf(fx.s.Create(fx.noSuch, "n", 0o644)) }, ENOENT},
		{"create/deleted parent", func(fx *posixFix) error { return errOf(fx.s.Create(fx.delDir, "n", 0o644)) }, ENOENT},
		{"create/deleted file as parent", func(fx *posixFix) error { return errOf(fx.s.Create(fx.delFile, "n", 0o644)) }, ENOENT},
		{"create/parent is a file", func(fx *posixFix) error { return errOf(fx.s.Create(fx.f, "n", 0o644)) }, ENOTDIR},

		// mkdir
		{"mkdir/over a file", func(fx *posixFix) error { return errOf(fx.s.Mkdir(RootIno, "g", 0o755)) }, EEXIST},
		{"mkdir/over a dir", func(fx *posixFix) error { return errOf(fx.s.Mkdir(RootIno, "e", 0o755)) }, EEXIST},
		{"mkdir/over a dir in subdir", func(fx *posixFix) error { return errOf(fx.s.Mkdir(fx.d, "sub", 0o755)) }, EEXIST},
		{"mkdir/missing parent", func(fx *posixFix) error { return errOf(fx.s.Mkdir(fx.noSuch, "n", 0o755)) }, ENOENT},
		{"mkdir/deleted parent", func(fx *posixFix) error { return errOf(fx.s.Mkdir(fx.delDir, "n", 0o755)) }, ENOENT},
		{"mkdir/deleted file as parent", func(fx *posixFix) error { return errOf(fx.s.Mkdir(fx.delFile, "n", 0o755)) }, ENOENT},
		{"mkdir/parent is a file", func(fx *posixFix) error { return errOf(fx.s.Mkdir(fx.g, "n", 0o755)) }, ENOTDIR},

		// link
		{"link/over a file", func(fx *posixFix) error { return errOf(fx.s.Link(fx.f, RootIno, "g")) }, EEXIST},
		{"link/over its own name", func(fx *posixFix) error { return errOf(fx.s.Link(fx.f, RootIno, "f")) }, EEXIST},
		{"link/over a dir", func(fx *posixFix) error { return errOf(fx.s.Link(fx.f, RootIno, "d")) }, EEXIST},
		{"link/a directory", func(fx *posixFix) error { return errOf(fx.s.Link(fx.e, RootIno, "e2")) }, EPERM},
		{"link/the root", func(fx *posixFix) error { return errOf(fx.s.Link(RootIno, fx.e, "root")) }, EPERM},
		{"link/missing inode", func(fx *posixFix) error { return errOf(fx.s.Link(fx.noSuch, RootIno, "n")) }, ENOENT},
		{"link/deleted inode", func(fx *posixFix) error { return errOf(fx.s.Link(fx.delFile, RootIno, "n")) }, ENOENT},
		{"link/deleted dir", func(fx *posixFix) error { return errOf(fx.s.Link(fx.delDir, RootIno, "n")) }, ENOENT},
		{"link/missing parent", func(fx *posixFix) error { return errOf(fx.s.Link(fx.f, fx.noSuch, "n")) }, ENOENT},
		{"link/deleted parent", func(fx *posixFix) error { return errOf(fx.s.Link(fx.f, fx.delDir, "n")) }, ENOENT},
		{"link/parent is a file", func(fx *posixFix) error { return errOf(fx.s.Link(fx.f, fx.g, "n")) }, ENOTDIR},

		// unlink
		{"unlink/missing name", func(fx *posixFix) error { return fx.s.Unlink(RootIno, "nope") }, ENOENT},
		{"unlink/twice", func(fx *posixFix) error { return fx.s.Unlink(RootIno, "del") }, ENOENT},
		{"unlink/a dir", func(fx *posixFix) error { return fx.s.Unlink(RootIno, "e") }, EISDIR},
		{"unlink/a non-empty dir", func(fx *posixFix) error { return fx.s.Unlink(RootIno, "d") }, EISDIR},
		{"unlink/missing parent", func(fx *posixFix) error { return fx.s.Unlink(fx.noSuch, "f") }, ENOENT},
		{"unlink/deleted parent", func(fx *posixFix) error { return fx.s.Unlink(fx.delDir, "f") }, ENOENT},
		{"unlink/deleted file as parent", func(fx *posixFix) error { return fx.s.Unlink(fx.delFile, "f") }, ENOENT},
		{"unlink/parent is a file", func(fx *posixFix) error { return fx.s.Unlink(fx.f, "f") }, ENOTDIR},

		// rmdir
		{"rmdir/missing name", func(fx *posixFix) error { return fx.s.Rmdir(RootIno, "nope") }, ENOENT},
		{"rmdir/a file", func(fx *posixFix) error { return fx.s.Rmdir(RootIno, "f") }, ENOTDIR},
		{"rmdir/a file in subdir", func(fx *posixFix) error { return fx.s.Rmdir(fx.sub, "x") }, ENOTDIR},
		{"rmdir/non-empty", func(fx *posixFix) error { return fx.s.Rmdir(RootIno, "d") }, ENOTEMPTY},
		{"rmdir/non-empty (file only)", func(fx *posixFix) error { return fx.s.Rmdir(fx.d, "sub") }, ENOTEMPTY},
		{"rmdir/twice", func(fx *posixFix) error { return fx.s.Rmdir(RootIno, "deld") }, ENOENT},
		{"rmdir/missing parent", func(fx *posixFix) error { return fx.s.Rmdir(fx.noSuch, "e") }, ENOENT},
		{"rmdir/deleted parent", func(fx *posixFix) error { return fx.s.Rmdir(fx.delDir, "e") }, ENOENT},
		{"rmdir/deleted file as parent", func(fx *posixFix) error { return fx.s.Rmdir(fx.delFile, "e") }, ENOENT},
		{"rmdir/parent is a file", func(fx *posixFix) error { return fx.s.Rmdir(fx.f, "e") }, ENOTDIR},

		// rename
		{"rename/missing source", func(fx *posixFix) error { return fx.s.Rename(RootIno, "nope", RootIno, "n") }, ENOENT},
		{"rename/missing source onto existing", func(fx *posixFix) error { return fx.s.Rename(RootIno, "nope", RootIno, "f") }, ENOENT},
		{"rename/missing source dir", func(fx *posixFix) error { return fx.s.Rename(fx.noSuch, "f", RootIno, "n") }, ENOENT},
		{"rename/missing target dir", func(fx *posixFix) error { return fx.s.Rename(RootIno, "f", fx.noSuch, "n") }, ENOENT},
		{"rename/deleted source dir", func(fx *posixFix) error { return fx.s.Rename(fx.delDir, "f", RootIno, "n") }, ENOENT},
		{"rename/file into deleted dir", func(fx *posixFix) error { return fx.s.Rename(RootIno, "f", fx.delDir, "n") }, ENOENT},
		{"rename/dir into deleted dir", func(fx *posixFix) error { return fx.s.Rename(RootIno, "e", fx.delDir, "n") }, ENOENT},
		{"rename/non-empty dir into deleted dir", func(fx *posixFix) error { return fx.s.Rename(RootIno, "d", fx.delDir, "n") }, ENOENT},
		{"rename/deleted file as target dir", func(fx *posixFix) error { return fx.s.Rename(RootIno, "e", fx.delFile, "n") }, ENOENT},
		{"rename/source dir is a file", func(fx *posixFix) error { return fx.s.Rename(fx.f, "x", RootIno, "n") }, ENOTDIR},
		{"rename/target dir is a file", func(fx *posixFix) error { return fx.s.Rename(RootIno, "g", fx.f, "n") }, ENOTDIR},
		{"rename/dir over a file", func(fx *posixFix) error { return fx.s.Rename(RootIno, "e", RootIno, "f") }, ENOTDIR},
		{"rename/dir over a file elsewhere", func(fx *posixFix) error { return fx.s.Rename(fx.d, "sub", RootIno, "g") }, ENOTDIR},
		{"rename/file over a dir", func(fx *posixFix) error { return fx.s.Rename(RootIno, "f", RootIno, "e") }, EISDIR},
		{"rename/file over a non-empty dir", func(fx *posixFix) error { return fx.s.Rename(fx.sub, "x", RootIno, "d") }, EISDIR},
		{"rename/dir over a non-empty dir", func(fx *posixFix) error { return fx.s.Rename(RootIno, "e", RootIno, "d") }, ENOTEMPTY},
		{"rename/dir over a non-empty dir elsewhere", func(fx *posixFix) error { return fx.s.Rename(RootIno, "e", fx.d, "sub") }, ENOTEMPTY},
		// Linux: the target is an ancestor of the source: ENOTEMPTY.
		{"rename/dir over its own parent", func(fx *posixFix) error { return fx.s.Rename(fx.d, "sub", RootIno, "d") }, ENOTEMPTY},
		{"rename/dir into itself", func(fx *posixFix) error { return fx.s.Rename(RootIno, "d", fx.d, "n") }, EINVAL},
		{"rename/empty dir into itself", func(fx *posixFix) error { return fx.s.Rename(RootIno, "e", fx.e, "n") }, EINVAL},
		{"rename/dir into its child", func(fx *posixFix) error { return fx.s.Rename(RootIno, "d", fx.sub, "n") }, EINVAL},
		{"rename/dir onto a name in its child", func(fx *posixFix) error { return fx.s.Rename(RootIno, "d", fx.sub, "x") }, EINVAL},
		{"rename/dir into itself, same name", func(fx *posixFix) error { return fx.s.Rename(RootIno, "d", fx.d, "d") }, EINVAL},

		// readdir
		{"readdir/a file", func(fx *posixFix) error { return errL(fx.s.ReadDir(fx.f, 0, 10)) }, ENOTDIR},
		{"readdir/missing dir", func(fx *posixFix) error { return errL(fx.s.ReadDir(fx.noSuch, 0, 10)) }, ENOENT},
		{"readdir/deleted dir", func(fx *posixFix) error { return errL(fx.s.ReadDir(fx.delDir, 0, 10)) }, ENOENT},
		{"readdir/deleted file", func(fx *posixFix) error { return errL(fx.s.ReadDir(fx.delFile, 0, 10)) }, ENOENT},
		{"readdir/max 0", func(fx *posixFix) error { return errL(fx.s.ReadDir(RootIno, 0, 0)) }, EINVAL},

		// stat
		{"stat/missing", func(fx *posixFix) error { return errOf(fx.s.Stat(fx.noSuch)) }, ENOENT},
		{"stat/deleted file", func(fx *posixFix) error { return errOf(fx.s.Stat(fx.delFile)) }, ENOENT},
		{"stat/deleted dir", func(fx *posixFix) error { return errOf(fx.s.Stat(fx.delDir)) }, ENOENT},

		// setattr
		{"setattr/missing", func(fx *posixFix) error { return errOf(fx.s.SetAttr(fx.noSuch, SetAttr{Mode: &mode})) }, ENOENT},
		{"setattr/deleted file", func(fx *posixFix) error { return errOf(fx.s.SetAttr(fx.delFile, SetAttr{Mode: &mode})) }, ENOENT},
		{"setattr/deleted dir", func(fx *posixFix) error { return errOf(fx.s.SetAttr(fx.delDir, SetAttr{Mode: &mode})) }, ENOENT},
		{"setattr/size of a dir", func(fx *posixFix) error { return errOf(fx.s.SetAttr(fx.e, size(0))) }, EISDIR},
		{"setattr/size past the limit", func(fx *posixFix) error { return errOf(fx.s.SetAttr(fx.f, size(MaxFileSize+1))) }, EFBIG},
		{"setattr/size of a deleted dir", func(fx *posixFix) error { return errOf(fx.s.SetAttr(fx.delDir, size(0))) }, ENOENT},
		{"setattr/size of a deleted file", func(fx *posixFix) error { return errOf(fx.s.SetAttr(fx.delFile, size(0))) }, ENOENT},

		// truncate
		{"truncate/a dir", func(fx *posixFix) error { return fx.s.Truncate(fx.d, 0) }, EISDIR},
		{"truncate/the root", func(fx *posixFix) error { return fx.s.Truncate(RootIno, 100) }, EISDIR},
		{"truncate/past the limit", func(fx *posixFix) error { return fx.s.Truncate(fx.f, MaxFileSize+1) }, EFBIG},
		{"truncate/far past the limit", func(fx *posixFix) error { return fx.s.Truncate(fx.f, ^uint64(0)) }, EFBIG},
		{"truncate/missing", func(fx *posixFix) error { return fx.s.Truncate(fx.noSuch, 0) }, ENOENT},
		{"truncate/deleted file", func(fx *posixFix) error { return fx.s.Truncate(fx.delFile, 0) }, ENOENT},
		{"truncate/deleted dir", func(fx *posixFix) error { return fx.s.Truncate(fx.delDir, 0) }, ENOENT},

		// write
		{"write/a dir", func(fx *posixFix) error { return errN(fx.s.Write(fx.d, 0, []byte("x"))) }, EISDIR},
		{"write/the root", func(fx *posixFix) error { return errN(fx.s.Write(RootIno, 0, []byte("x"))) }, EISDIR},
		{"write/at the limit", func(fx *posixFix) error { return errN(fx.s.Write(fx.f, MaxFileSize, []byte("x"))) }, EFBIG},
		{"write/past the limit", func(fx *posixFix) error { return errN(fx.s.Write(fx.f, MaxFileSize+4096, []byte("x"))) }, EFBIG},
		{"write/at the top of the offset range", func(fx *posixFix) error { return errN(fx.s.Write(fx.f, ^uint64(0), []byte("x"))) }, EFBIG},
		{"write/missing", func(fx *posixFix) error { return errN(fx.s.Write(fx.noSuch, 0, []byte("x"))) }, ENOENT},
		{"write/deleted file", func(fx *posixFix) error { return errN(fx.s.Write(fx.delFile, 0, []byte("x"))) }, ENOENT},
		{"write/deleted dir", func(fx *posixFix) error { return errN(fx.s.Write(fx.delDir, 0, []byte("x"))) }, ENOENT},

		// read
		{"read/a dir", func(fx *posixFix) error { return errN(fx.s.Read(fx.d, 0, make([]byte, 10))) }, EISDIR},
		{"read/missing", func(fx *posixFix) error { return errN(fx.s.Read(fx.noSuch, 0, make([]byte, 10))) }, ENOENT},
		{"read/deleted file", func(fx *posixFix) error { return errN(fx.s.Read(fx.delFile, 0, make([]byte, 10))) }, ENOENT},
		{"read/deleted dir", func(fx *posixFix) error { return errN(fx.s.Read(fx.delDir, 0, make([]byte, 10))) }, ENOENT},

		// fsync: as stat and read (issue 14)
		{"fsync/missing", func(fx *posixFix) error { return fx.s.Fsync(context.Background(), fx.noSuch, false) }, ENOENT},
		{"fsync/deleted file", func(fx *posixFix) error { return fx.s.Fsync(context.Background(), fx.delFile, false) }, ENOENT},
		{"fsync/deleted dir", func(fx *posixFix) error { return fx.s.Fsync(context.Background(), fx.delDir, true) }, ENOENT},
	}

	// Every name-taking operation with every bad name.
	long := strings.Repeat("n", 256)
	badNames := []struct {
		name, label string
		want        syscall.Errno
	}{
		{"", "empty name", EINVAL},
		{long, "256-byte name", ENAMETOOLONG},
		{"a/b", "name with slash", EINVAL},
		{"/", "slash", EINVAL},
		{"a\x00b", "name with NUL", EINVAL},
		{".", "dot", EINVAL},
		{"..", "dotdot", EINVAL},
	}
	for _, b := range badNames {
		n := b.name
		cases = append(cases,
			posixErrCase{"lookup/" + b.label, func(fx *posixFix) error { return errOf(fx.s.Lookup(RootIno, n)) }, b.want},
			posixErrCase{"create/" + b.label, func(fx *posixFix) error { return errOf(fx.s.Create(RootIno, n, 0o644)) }, b.want},
			posixErrCase{"mkdir/" + b.label, func(fx *posixFix) error { return errOf(fx.s.Mkdir(fx.d, n, 0o755)) }, b.want},
			posixErrCase{"link/" + b.label, func(fx *posixFix) error { return errOf(fx.s.Link(fx.f, RootIno, n)) }, b.want},
			posixErrCase{"unlink/" + b.label, func(fx *posixFix) error { return fx.s.Unlink(RootIno, n) }, b.want},
			posixErrCase{"rmdir/" + b.label, func(fx *posixFix) error { return fx.s.Rmdir(fx.d, n) }, b.want},
			posixErrCase{"rename source/" + b.label, func(fx *posixFix) error { return fx.s.Rename(RootIno, n, RootIno, "n") }, b.want},
			posixErrCase{"rename target/" + b.label, func(fx *posixFix) error { return fx.s.Rename(RootIno, "f", RootIno, n) }, b.want},
			posixErrCase{"rename dir target/" + b.label, func(fx *posixFix) error { return fx.s.Rename(RootIno, "e", fx.d, n) }, b.want},
		)
	}
	return cases
}

func TestPOSIX_Errors(t *testing.T) {
	for _, c := range posixErrCases() {
		t.Run(c.name, func(t *testing.T) {
			fx := newPosixFix(t)
			before := posixTree(t, fx.s)
			posixWantErr(t, c.name, c.op(fx), c.want)
			if d := posixDiff(before, posixTree(t, fx.s)); d != "" {
				t.Fatalf("the failed operation changed the tree:\n%s", d)
			}
			closeCheck(t, fx.s)
			// The same after a remount: the failed operation left nothing
			// half done in the transaction it ran in.
			fx.s = openTest(t, fx.dev, Options{})
			if d := posixDiff(before, posixTree(t, fx.s)); d != "" {
				t.Fatalf("after a remount:\n%s", d)
			}
			posixWantErr(t, c.name+" after a remount", c.op(fx), c.want)
			closeCheck(t, fx.s)
		})
	}
}

// The longest name, and names with every other byte, are fine.
func TestPOSIX_NameLimits(t *testing.T) {
	d := newTestDevice(t, 32<<20)
	s := openTest(t, d, Options{})
	names := []string{strings.Repeat("m", 255), "...", ".a", "a.", " ", "\xff\xfe", "a\\b", "\n"}
	for _, n := range names {
		a, err := s.Create(RootIno, n, 0o644)
		if err != nil {
			t.Fatalf("create %q: %v", n, err)
		}
		if b, err := s.Lookup(RootIno, n); err != nil || b.Ino != a.Ino {
			t.Fatalf("lookup %q: %+v, %v", n, b, err)
		}
	}
	closeCheck(t, s)
	s = openTest(t, d, Options{})
	var got []string
	for _, e := range posixList(t, s, RootIno, 2) {
		got = append(got, e.Name)
	}
	if !slices.Equal(got, names) {
		t.Fatalf("listing %q, want %q", got, names)
	}
	closeCheck(t, s)
}

// A write that would cross the size limit is short (Linux, POSIX: as many
// bytes as there is room for), one that starts at it fails, and a
// truncate to exactly the limit works.
func TestPOSIX_SizeLimit(t *testing.T) {
	d := newTestDevice(t, 32<<20)
	s := openTest(t, d, Options{})
	a, _ := s.Create(RootIno, "big", 0o644)
	n, err := s.Write(a.Ino, MaxFileSize-2, []byte("abcd"))
	if err != nil || n != 2 {
		t.Fatalf("write crossing the limit: %d, %v; want 2 bytes written", n, err)
	}
	n, err = s.Write(a.Ino, MaxFileSize, []byte("abcd"))
	if n != 0 {
		t.Fatalf("write at the limit wrote %d", n)
	}
	posixWantErr(t, "write at the limit", err, syscall.EFBIG)
	if st, _ := s.Stat(a.Ino); st.Size != MaxFileSize {
		t.Fatalf("size %d, want %d", st.Size, uint64(MaxFileSize))
	}
	buf := make([]byte, 8)
	if n, err := s.Read(a.Ino, MaxFileSize-6, buf); err != nil || n != 6 || string(buf[:6]) != "\x00\x00\x00\x00ab" {
		t.Fatalf("read at the end: %d %q %v", n, buf[:n], err)
	}
	if n, err := s.Read(a.Ino, 1<<40, buf); err != nil || n != 8 || !bytes.Equal(buf, make([]byte, 8)) {
		t.Fatalf("read of the hole: %d %q %v", n, buf[:n], err)
	}
	b, _ := s.Create(RootIno, "t", 0o644)
	if err := s.Truncate(b.Ino, MaxFileSize); err != nil {
		t.Fatalf("truncate to the limit: %v", err)
	}
	posixWantErr(t, "write at the limit after truncate", func() error { _, err := s.Write(b.Ino, MaxFileSize, []byte("x")); return err }(), syscall.EFBIG)
	closeCheck(t, s)
	s = openTest(t, d, Options{})
	if n, err := s.Read(a.Ino, MaxFileSize-6, buf); err != nil || n != 6 || string(buf[:6]) != "\x00\x00\x00\x00ab" {
		t.Fatalf("read at the end after a remount: %d %q %v", n, buf[:n], err)
	}
	if st, _ := s.Stat(b.Ino); st.Size != MaxFileSize {
		t.Fatalf("truncated size %d after a remount", st.Size)
	}
	if err := s.Truncate(b.Ino, 0); err != nil {
		t.Fatal(err)
	}
	closeCheck(t, s)
}

// Rename over an existing file replaces it in one step: the old inode is
// gone (with its data), the new name is the source inode, the source name
// is gone, and the directory has one entry fewer.
func TestPOSIX_RenameReplacesFile(t *testing.T) {
	for _, crossDir := range []bool{false, true} {
		t.Run(fmt.Sprintf("crossdir=%v", crossDir), func(t *testing.T) {
			fx := newPosixFix(t)
			s := fx.s
			srcDir := RootIno
			if crossDir {
				srcDir = fx.sub
			}
			src, _ := s.Create(srcDir, "src", 0o600)
			posixWrite(t, s, src.Ino, 0, posixPattern(7000, 9))
			if err := s.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			rootBefore, _ := s.Stat(RootIno)
			subBefore, _ := s.Stat(fx.sub)
			if err := s.Rename(srcDir, "src", RootIno, "g"); err != nil {
				t.Fatal(err)
			}
			posixWantErr(t, "stat of the replaced inode", func() error { _, err := s.Stat(fx.g); return err }(), syscall.ENOENT)
			posixWantErr(t, "read of the replaced inode", func() error { _, err := s.Read(fx.g, 0, make([]byte, 1)); return err }(), syscall.ENOENT)
			posixWantErr(t, "lookup of the old name", func() error { _, err := s.Lookup(srcDir, "src"); return err }(), syscall.ENOENT)
			a, err := s.Lookup(RootIno, "g")
			if err != nil || a.Ino != src.Ino || a.Nlink != 1 {
				t.Fatalf("lookup g: %+v %v, want ino %d", a, err, src.Ino)
			}
			if !bytes.Equal(posixReadAll(t, s, a.Ino), posixPattern(7000, 9)) {
				t.Fatal("content of the renamed file")
			}
			rootAfter, _ := s.Stat(RootIno)
			subAfter, _ := s.Stat(fx.sub)
			if crossDir {
				if rootAfter.Size != rootBefore.Size || subAfter.Size != subBefore.Size-1 {
					t.Fatalf("sizes: root %d → %d, sub %d → %d", rootBefore.Size, rootAfter.Size, subBefore.Size, subAfter.Size)
				}
			} else if rootAfter.Size != rootBefore.Size-1 {
				t.Fatalf("root size %d → %d", rootBefore.Size, rootAfter.Size)
			}
			if rootAfter.Nlink != rootBefore.Nlink {
				t.Fatalf("root nlink %d → %d", rootBefore.Nlink, rootAfter.Nlink)
			}
			closeCheck(t, s)
			s = openTest(t, fx.dev, Options{})
			posixWantErr(t, "stat of the replaced inode after a remount", func() error { _, err := s.Stat(fx.g); return err }(), syscall.ENOENT)
			got, err := s.Get("/g")
			if err != nil || !bytes.Equal(got, posixPattern(7000, 9)) {
				t.Fatalf("after a remount: %v", err)
			}
			closeCheck(t, s)
		})
	}
}

// Rename over a hard link of the replaced inode: the replaced inode keeps
// its other name and loses one link.
func TestPOSIX_RenameOverOneOfTwoLinks(t *testing.T) {
	fx := newPosixFix(t)
	s := fx.s
	if _, err := s.Link(fx.g, fx.d, "g2"); err != nil {
		t.Fatal(err)
	}
	if err := s.Rename(RootIno, "f", RootIno, "g"); err != nil {
		t.Fatal(err)
	}
	a, err := s.Stat(fx.g)
	if err != nil || a.Nlink != 1 {
		t.Fatalf("the replaced inode: %+v %v", a, err)
	}
	if got, err := s.Get("/d/g2"); err != nil || string(got) != "0123456789" {
		t.Fatalf("its other name: %q %v", got, err)
	}
	if a, err := s.Lookup(RootIno, "g"); err != nil || a.Ino != fx.f {
		t.Fatalf("g: %+v %v", a, err)
	}
	closeCheck(t, s)
}

// Lookup never misses a name that a rename replaces: the name exists
// throughout, naming the old inode or the new one.
func TestPOSIX_RenameAtomicForLookup(t *testing.T) {
	d := newTestDevice(t, 32<<20)
	s := openTest(t, d, Options{})
	if _, err := s.Create(RootIno, "target", 0o644); err != nil {
		t.Fatal(err)
	}
	const n = 300
	var wg sync.WaitGroup
	done := make(chan struct{})
	errc := make(chan error, 1)
	wg.Go(func() {
		defer close(done)
		for i := range n {
			name := fmt.Sprintf("tmp%d", i)
			a, err := s.Create(RootIno, name, 0o644)
			if err == nil {
				_, err = s.Write(a.Ino, 0, []byte(name))
			}
			if err == nil {
				err = s.Rename(RootIno, name, RootIno, "target")
			}
			if err != nil {
				errc <- err
				return
			}
		}
	})
	lookups, misses := 0, 0
	var first error
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		_, err := s.Lookup(RootIno, "target")
		if err == nil {
			_, err = s.Resolve("/target")
		}
		lookups++
		if err != nil {
			misses++
			if first == nil {
				first = err
			}
		}
	}
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	if misses > 0 {
		t.Fatalf("%d of %d lookups of a name that always exists failed; first: %v", misses, lookups, first)
	}
	if got, err := s.Get("/target"); err != nil || string(got) != fmt.Sprintf("tmp%d", n-1) {
		t.Fatalf("target: %q %v", got, err)
	}
	if es := posixList(t, s, RootIno, 10); len(es) != 1 {
		t.Fatalf("root has %d entries", len(es))
	}
	closeCheck(t, s)
}

// Rename of a directory to another parent moves a link from the old
// parent's count to the new one's; rename within a parent changes neither.
func TestPOSIX_RenameDirNlink(t *testing.T) {
	d := newTestDevice(t, 32<<20)
	s := openTest(t, d, Options{})
	a, _ := s.Mkdir(RootIno, "a", 0o755)
	b, _ := s.Mkdir(RootIno, "b", 0o755)
	c, _ := s.Mkdir(a.Ino, "c", 0o755)
	if _, err := s.Mkdir(c.Ino, "inner", 0o755); err != nil {
		t.Fatal(err)
	}
	nlink := func(ino Ino) uint32 {
		t.Helper()
		st, err := s.Stat(ino)
		if err != nil {
			t.Fatal(err)
		}
		return st.Nlink
	}
	check := func(what string, root, na, nb, nc uint32) {
		t.Helper()
		if g := [4]uint32{nlink(RootIno), nlink(a.Ino), nlink(b.Ino), nlink(c.Ino)}; g != [4]uint32{root, na, nb, nc} {
			t.Fatalf("%s: nlink root, a, b, c = %v, want %v", what, g, [4]uint32{root, na, nb, nc})
		}
	}
	check("start", 4, 3, 2, 3)
	if err := s.Rename(a.Ino, "c", b.Ino, "c2"); err != nil {
		t.Fatal(err)
	}
	check("a/c → b/c2", 4, 2, 3, 3)
	if err := s.Rename(b.Ino, "c2", b.Ino, "c3"); err != nil {
		t.Fatal(err)
	}
	check("b/c2 → b/c3", 4, 2, 3, 3)
	if err := s.Rename(b.Ino, "c3", RootIno, "c"); err != nil {
		t.Fatal(err)
	}
	check("b/c3 → /c", 5, 2, 2, 3)
	// Over an empty directory: the replaced one's link goes.
	if _, err := s.Mkdir(a.Ino, "victim", 0o755); err != nil {
		t.Fatal(err)
	}
	check("mkdir a/victim", 5, 3, 2, 3)
	if err := s.Rename(RootIno, "c", a.Ino, "victim"); err != nil {
		t.Fatal(err)
	}
	check("/c → a/victim (replaced)", 4, 3, 2, 3)
	// Over an empty directory in the same parent.
	if _, err := s.Mkdir(a.Ino, "victim2", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.Rename(a.Ino, "victim", a.Ino, "victim2"); err != nil {
		t.Fatal(err)
	}
	check("a/victim → a/victim2 (replaced)", 4, 3, 2, 3)
	if got, err := s.Resolve("/a/victim2/inner"); err != nil || !got.IsDir() {
		t.Fatalf("the moved tree: %+v %v", got, err)
	}
	closeCheck(t, s)
	s = openTest(t, d, Options{})
	check("after a remount", 4, 3, 2, 3)
	closeCheck(t, s)
}

// Renaming a name onto another name of the same inode does nothing: both
// names stay (POSIX), and so does the link count. So does renaming a name
// onto itself.
func TestPOSIX_RenameOntoSameInode(t *testing.T) {
	fx := newPosixFix(t)
	s := fx.s
	if _, err := s.Link(fx.f, fx.d, "f2"); err != nil {
		t.Fatal(err)
	}
	before := posixTree(t, s)
	for _, r := range []struct {
		sd   Ino
		sn   string
		dd   Ino
		dn   string
		what string
	}{
		{RootIno, "f", fx.d, "f2", "onto the other link"},
		{fx.d, "f2", RootIno, "f", "back"},
		{RootIno, "f", RootIno, "f", "onto itself"},
		{RootIno, "d", RootIno, "d", "a dir onto itself"},
	} {
		if err := s.Rename(r.sd, r.sn, r.dd, r.dn); err != nil {
			t.Fatalf("%s: %v", r.what, err)
		}
		if d := posixDiff(before, posixTree(t, s)); d != "" {
			t.Fatalf("%s changed the tree:\n%s", r.what, d)
		}
	}
	if a, _ := s.Stat(fx.f); a.Nlink != 2 {
		t.Fatalf("nlink %d", a.Nlink)
	}
	closeCheck(t, s)
}

// Link counts follow the names; the inode and its data go with the last.
func TestPOSIX_HardLinks(t *testing.T) {
	fx := newPosixFix(t)
	s := fx.s
	want := posixPattern(5000, 1)
	for i, dir := range []Ino{RootIno, fx.d, fx.sub, fx.e} {
		a, err := s.Link(fx.f, dir, fmt.Sprintf("l%d", i))
		if err != nil || a.Nlink != uint32(i+2) || a.Ino != fx.f {
			t.Fatalf("link %d: %+v %v", i, a, err)
		}
	}
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/f", "/l0", "/d/l1", "/d/sub/l2", "/e/l3"} {
		got, err := s.Get(p)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %v", p, err)
		}
	}
	// A write through one name is seen through the others.
	posixWrite(t, s, fx.f, 100, []byte("through f"))
	copy(want[100:], "through f")
	if got, _ := s.Get("/e/l3"); !bytes.Equal(got, want) {
		t.Fatal("write through one link not seen through another")
	}
	// The file stays while it has a name; the directory that held a link
	// can go once empty.
	for i, p := range []struct {
		dir  Ino
		name string
	}{{RootIno, "f"}, {fx.e, "l3"}, {RootIno, "l0"}, {fx.sub, "l2"}} {
		if err := s.Unlink(p.dir, p.name); err != nil {
			t.Fatal(err)
		}
		a, err := s.Stat(fx.f)
		if err != nil || a.Nlink != uint32(4-i) {
			t.Fatalf("after unlinking %s: %+v %v", p.name, a, err)
		}
		if got := posixReadAll(t, s, fx.f); !bytes.Equal(got, want) {
			t.Fatalf("content after unlinking %s", p.name)
		}
	}
	if err := s.Rmdir(RootIno, "e"); err != nil {
		t.Fatal(err)
	}
	closeCheck(t, s)
	s = openTest(t, fx.dev, Options{})
	if a, err := s.Stat(fx.f); err != nil || a.Nlink != 1 {
		t.Fatalf("after a remount: %+v %v", a, err)
	}
	if err := s.Unlink(fx.d, "l1"); err != nil {
		t.Fatal(err)
	}
	posixWantErr(t, "stat after the last unlink", func() error { _, err := s.Stat(fx.f); return err }(), syscall.ENOENT)
	closeCheck(t, s)
	s = openTest(t, fx.dev, Options{})
	posixWantErr(t, "stat after the last unlink, remounted", func() error { _, err := s.Stat(fx.f); return err }(), syscall.ENOENT)
	closeCheck(t, s)
}

// ReadDir resumed with cookies while entries come and go: every entry
// that existed throughout is seen exactly once, no entry twice, and none
// that never existed — across a remount too.
func TestPOSIX_ReadDirCookies(t *testing.T) {
	for _, remount := range []bool{false, true} {
		t.Run(fmt.Sprintf("remount=%v", remount), func(t *testing.T) {
			d := newTestDevice(t, 32<<20)
			s := openTest(t, d, Options{})
			dir, _ := s.Mkdir(RootIno, "dir", 0o755)
			exists := map[string]bool{}
			everExisted := map[string]bool{}
			removed := map[string]bool{}
			next := 0
			add := func(n int) {
				for range n {
					name := fmt.Sprintf("e%04d", next)
					next++
					var err error
					if next%5 == 0 {
						_, err = s.Mkdir(dir.Ino, name, 0o755)
					} else {
						_, err = s.Create(dir.Ino, name, 0o644)
					}
					if err != nil {
						t.Fatal(err)
					}
					exists[name], everExisted[name] = true, true
				}
			}
			remove := func(name string) {
				var err error
				if a, _ := s.Lookup(dir.Ino, name); a.IsDir() {
					err = s.Rmdir(dir.Ino, name)
				} else {
					err = s.Unlink(dir.Ino, name)
				}
				if err != nil {
					t.Fatal(err)
				}
				delete(exists, name)
				removed[name] = true
			}
			add(300)
			seen := map[string]int{}
			cookie := uint64(0)
			for page := 0; ; page++ {
				es, err := s.ReadDir(dir.Ino, cookie, 7)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range es {
					seen[e.Name]++
					if !everExisted[e.Name] {
						t.Fatalf("entry %q never existed", e.Name)
					}
					if !exists[e.Name] {
						t.Fatalf("entry %q listed after its removal", e.Name)
					}
					if e.Cookie <= cookie {
						t.Fatalf("cookie %d after %d", e.Cookie, cookie)
					}
					cookie = e.Cookie
				}
				if len(es) < 7 {
					break
				}
				// Remove one entry already seen, one not yet seen (by
				// name order, which is creation order), and add some.
				names := slices.Sorted(func(yield func(string) bool) {
					for n := range exists {
						if !yield(n) {
							return
						}
					}
				})
				last := es[len(es)-1].Name
				i, _ := slices.BinarySearch(names, last)
				if i > 3 {
					remove(names[i/2])
				}
				if i+5 < len(names) {
					remove(names[i+3])
				}
				// Renames within the directory: a new name, at the end.
				if i > 6 && page%3 == 0 {
					old := names[i-1]
					nn := fmt.Sprintf("e%04d", next)
					next++
					if err := s.Rename(dir.Ino, old, dir.Ino, nn); err != nil {
						t.Fatal(err)
					}
					delete(exists, old)
					removed[old] = true
					exists[nn], everExisted[nn] = true, true
				}
				if page%2 == 0 {
					add(2)
				}
				if remount && page%10 == 5 {
					closeCheck(t, s)
					s = openTest(t, d, Options{})
				}
			}
			for name := range everExisted {
				if !removed[name] && seen[name] != 1 {
					t.Fatalf("entry %q, there throughout, seen %d times", name, seen[name])
				}
				if seen[name] > 1 {
					t.Fatalf("entry %q seen %d times", name, seen[name])
				}
			}
			// The final listing is exactly what exists, in creation order.
			var got []string
			for _, e := range posixList(t, s, dir.Ino, 13) {
				got = append(got, e.Name)
			}
			want := slices.Sorted(func(yield func(string) bool) {
				for n := range exists {
					if !yield(n) {
						return
					}
				}
			})
			if !slices.Equal(got, want) {
				t.Fatalf("final listing:\n%q\nwant\n%q", got, want)
			}
			if a, _ := s.Stat(dir.Ino); a.Size != uint64(len(want)) {
				t.Fatalf("dir size %d, %d entries", a.Size, len(want))
			}
			// A listing from a cookie past the end is empty, not an error.
			if es, err := s.ReadDir(dir.Ino, cookie+1000, 5); err != nil || len(es) != 0 {
				t.Fatalf("past the end: %v %v", es, err)
			}
			for name := range exists {
				remove(name)
			}
			if es, err := s.ReadDir(dir.Ino, 0, 5); err != nil || len(es) != 0 {
				t.Fatalf("emptied: %v %v", es, err)
			}
			if err := s.Rmdir(RootIno, "dir"); err != nil {
				t.Fatal(err)
			}
			closeCheck(t, s)
		})
	}
}

// posixStep is one step of a file-content scenario.
type posixStep struct {
	op   string // "write", "trunc", "sync", "remount"
	off  uint64 // write offset
	n    int    // write length, or the truncate size
	seed byte
}

// TestPOSIX_FileData runs file-content scenarios against a byte slice:
// holes read as zeros, writes past the end of an unaligned file leave
// zeros between, truncate down then up reads zeros in the range it
// re-exposes (also when the block on the device still holds the old
// bytes), and small inline files grow past a block and shrink back. The
// content is compared after every step.
func TestPOSIX_FileData(t *testing.T) {
	W := func(off uint64, n int, seed byte) posixStep { return posixStep{"write", off, n, seed} }
	T := func(n int) posixStep { return posixStep{op: "trunc", n: n} }
	S := posixStep{op: "sync"}
	R := posixStep{op: "remount"}
	// B checks the bytes the file's extents hold (Attr.Blocks) after a
	// sync: n if n bytes fit inline, else n rounded up to blocks.
	B := func(n int) posixStep { return posixStep{op: "blocks", n: n} }
	scenarios := []struct {
		name  string
		steps []posixStep
	}{
		{"sparse", []posixStep{W(1<<20+100, 3, 1), S, R, W(0, 10, 2), W(300<<10, 5000, 3), S, R, W(1<<20-1, 2, 4)}},
		{"sparse far", []posixStep{W(1<<36, 4096, 1), W(5, 5, 2), S, R, W(1<<36-5000, 100, 3), S}},
		{"hole in the middle of a written range", []posixStep{W(0, 40000, 1), S, T(8000), T(40000), W(0, 100, 2), S, R}},
		{"write past EOF, unaligned", []posixStep{W(0, 5000, 1), W(20000, 10, 2), S, R}},
		{"write past EOF, same block", []posixStep{W(0, 5000, 1), W(6000, 10, 2), S, R, W(7000, 1000, 3), S}},
		{"write past EOF, after sync", []posixStep{W(0, 5000, 1), S, W(20000, 10, 2), S, R}},
		{"write past EOF over stale device bytes", []posixStep{W(0, 8192, 1), S, T(5000), S, R, W(20000, 10, 2), S, R}},
		{"write past EOF in the same block over stale device bytes", []posixStep{W(0, 8192, 1), S, T(5000), S, R, W(7000, 10, 2), S, R}},
		{"write past EOF into the next block over stale bytes", []posixStep{W(0, 12288, 1), S, T(5000), S, R, W(9000, 10, 2), S, R}},
		{"truncate down then up", []posixStep{W(0, 12288, 1), T(5000), T(12288)}},
		{"truncate down then up, synced data", []posixStep{W(0, 12288, 1), S, T(5000), T(12288), S, R}},
		{"truncate down, sync, up", []posixStep{W(0, 12288, 1), S, T(5000), S, T(12288), S, R}},
		{"truncate down, remount, up", []posixStep{W(0, 12288, 1), S, T(5000), R, T(12288), R}},
		{"truncate down, remount, up by a little", []posixStep{W(0, 12288, 1), S, T(5000), R, T(5001), R, T(7000), S, R}},
		{"truncate down to a block boundary, remount, up", []posixStep{W(0, 12288, 1), S, T(4096), R, T(12288), R}},
		{"truncate to zero, remount, up", []posixStep{W(0, 12288, 1), S, T(0), R, T(9000), S, R}},
		{"truncate down inside a large extent", []posixStep{W(0, 1<<20, 1), S, T(300000), R, T(1 << 20), W(500000, 3, 2), S, R}},
		{"truncate down then write beyond", []posixStep{W(0, 30000, 1), S, T(10), S, R, W(20000, 5, 2), S, R}},
		{"truncate up from empty", []posixStep{T(100000), S, R, W(50000, 1, 1), S, R}},
		{"small file grows past a block and shrinks", []posixStep{
			W(0, 100, 1), S, B(100), R, B(100), W(100, 1500, 2), S, B(1600), R, W(1600, 3000, 3), S, B(8192), R,
			W(4600, 400, 4), S, R, T(1500), B(4096), S, R, T(50), S, R, B(4096), W(10, 20, 5), S, B(50), R,
			T(0), B(0), S, R, W(0, 2048, 6), S, B(2048), R, W(2048, 1, 7), S, B(4096), R, T(2000), W(0, 1, 8), S, B(2000), R}},
		{"small file shrinks and grows, unsynced", []posixStep{W(0, 2000, 1), S, T(100), T(3000), W(200, 10, 2), T(150), T(6000), S, R}},
		{"small file truncated up past a block", []posixStep{W(0, 1000, 1), S, R, T(9000), S, R, T(500), S, R, T(2048), S, R}},
		{"overwrite in place", []posixStep{W(0, 20000, 1), S, W(4000, 200, 2), W(8190, 10, 3), S, R, W(0, 20000, 4), S}},
	}
	// Node size 4096 (the tests' default) makes inline extents small
	// (under 1 KiB); the default node size allows 2 KiB.
	for _, sc := range scenarios {
		for _, nodeSize := range []int{4096, 0} {
			posixFileScenario(t, nodeSize, sc.name, sc.steps)
		}
	}
}

func posixFileScenario(t *testing.T, nodeSize int, name string, steps []posixStep) {
	t.Run(fmt.Sprintf("%s/node=%d", name, nodeSize), func(t *testing.T) {
		d := memdev.New(64 << 20)
		if err := Mkfs(d, MkfsOptions{NodeSize: nodeSize}); err != nil {
			t.Fatal(err)
		}
		s := openTest(t, d, Options{})
		a, err := s.Create(RootIno, "file", 0o644)
		if err != nil {
			t.Fatal(err)
		}
		ino := a.Ino
		var want []byte // the content, or nil with wantSize for a huge sparse file
		var size uint64
		// Large sparse sizes are checked by ranges: the model keeps
		// the bytes of [0, 8 MiB) and the written ranges above.
		high := map[uint64][]byte{}
		const lowLimit = 8 << 20
		verify := func(when string) {
			t.Helper()
			st, err := s.Stat(ino)
			if err != nil || st.Size != size {
				t.Fatalf("%s: size %d (%v), want %d", when, st.Size, err, size)
			}
			lowN := min(size, lowLimit)
			buf := make([]byte, lowN)
			n, err := s.Read(ino, 0, buf)
			if err != nil || uint64(n) != lowN {
				t.Fatalf("%s: read %d of %d: %v", when, n, lowN, err)
			}
			w := make([]byte, lowN)
			copy(w, want)
			if i := posixFirstDiff(buf, w); i >= 0 {
				t.Fatalf("%s: byte %d is %#x, want %#x", when, i, buf[i], w[i])
			}
			for off, data := range high {
				got := make([]byte, len(data)+8192)
				n, err := s.Read(ino, off-4096, got)
				if err != nil {
					t.Fatal(err)
				}
				exp := make([]byte, min(uint64(len(got)), size-(off-4096)))
				copy(exp[4096:], data)
				if n != len(exp) || posixFirstDiff(got[:n], exp) >= 0 {
					t.Fatalf("%s: range at %d differs", when, off)
				}
			}
			if n, err := s.Read(ino, size, make([]byte, 1)); n != 0 || err != nil {
				t.Fatalf("%s: read at the end: %d %v", when, n, err)
			}
		}
		for i, st := range steps {
			what := fmt.Sprintf("step %d (%+v)", i, st)
			switch st.op {
			case "write":
				data := posixPattern(st.n, st.seed)
				posixWrite(t, s, ino, st.off, data)
				if st.off >= lowLimit {
					high[st.off] = data
				} else {
					if end := int(st.off) + st.n; end > len(want) {
						want = append(want, make([]byte, end-len(want))...)
					}
					copy(want[st.off:], data)
				}
				size = max(size, st.off+uint64(st.n))
			case "trunc":
				if err := s.Truncate(ino, uint64(st.n)); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				size = uint64(st.n)
				if len(want) > st.n {
					want = want[:st.n]
				}
				want = append(want, make([]byte, min(uint64(lowLimit), size)-uint64(len(want)))...)
				for off := range high {
					if off >= size {
						delete(high, off)
					}
				}
			case "sync":
				if err := s.Sync(context.Background()); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if err := s.Check(); err != nil {
					t.Fatalf("%s: fsck: %v", what, err)
				}
			case "remount":
				closeCheck(t, s)
				s = openTest(t, d, Options{})
			case "blocks":
				want := uint64(st.n)
				if st.n > s.inlineMax {
					want = (want + 4095) / 4096 * 4096
				}
				if a, _ := s.Stat(ino); a.Blocks != want {
					t.Fatalf("%s: blocks %d, want %d (inline up to %d)", what, a.Blocks, want, s.inlineMax)
				}
			}
			if st.op == "sync" || st.op == "remount" {
				// Nothing is allocated past the end of the file.
				if a, _ := s.Stat(ino); a.Blocks > (a.Size+4095)/4096*4096 {
					t.Fatalf("%s: blocks %d for size %d", what, a.Blocks, a.Size)
				}
			}
			verify(what)
		}
		closeCheck(t, s)
	})
}

func posixFirstDiff(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
