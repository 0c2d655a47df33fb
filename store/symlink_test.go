package store

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"ustore/dev/memdev"
	"ustore/engine"
)

// openSymlinkTest opens a fresh store of the given node size.
func openSymlinkTest(t *testing.T, nodeSize int) (*Store, *memdev.Device) {
	t.Helper()
	d := memdev.New(64 << 20)
	if err := Mkfs(d, MkfsOptions{NodeSize: nodeSize}); err != nil {
		t.Fatal(err)
	}
	// No commit of its own: the fsyncs log, and a crash shows what the
	// log holds.
	return openTest(t, d, Options{CommitInterval: 5 * time.Minute}), d
}

// TestSymlink_CreateReadlink makes links, dangling ones among them, and
// reads them back before and after a remount: the link's own attributes
// (lstat), its target, its directory entry's type.
func TestSymlink_CreateReadlink(t *testing.T) {
	s, d := openSymlinkTest(t, 4096)
	f, err := s.Create(RootIno, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]string{"to-f": "f", "dangling": "no/such/file", "abs": "/etc/passwd", "dots": "../../x"}
	for name, target := range targets {
		a, err := s.Symlink(RootIno, name, target)
		if err != nil {
			t.Fatalf("symlink %s: %v", name, err)
		}
		if a.Mode != ModeLink|0o777 || !a.IsLink() || a.IsDir() || a.Size != uint64(len(target)) || a.Nlink != 1 || a.Blocks != uint64(len(target)) {
			t.Errorf("symlink %s: attributes %+v", name, a)
		}
	}
	_, err = s.Symlink(RootIno, "to-f", "elsewhere")
	wantErrno(t, "symlink over an existing name", err, syscall.EEXIST)
	_, err = s.Symlink(f.Ino, "x", "y")
	wantErrno(t, "symlink in a file", err, syscall.ENOTDIR)
	_, err = s.Readlink(f.Ino)
	wantErrno(t, "readlink of a file", err, syscall.EINVAL)
	_, err = s.Readlink(RootIno)
	wantErrno(t, "readlink of a directory", err, syscall.EINVAL)

	check := func(s *Store) {
		t.Helper()
		es, err := s.ReadDir(RootIno, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		links := 0
		for _, e := range es {
			target, isLink := targets[e.Name]
			if isLink != (e.Type == TypeLink) {
				t.Errorf("entry %s: type %d", e.Name, e.Type)
			}
			if !isLink {
				continue
			}
			links++
			a, err := s.Lookup(RootIno, e.Name)
			if err != nil || !a.IsLink() || a.Ino != e.Ino || a.Size != uint64(len(target)) {
				t.Errorf("lookup %s: %+v, %v", e.Name, a, err)
			}
			if got, err := s.Readlink(e.Ino); err != nil || got != target {
				t.Errorf("readlink %s: %q, %v; want %q", e.Name, got, err, target)
			}
		}
		if links != len(targets) {
			t.Errorf("%d links listed, want %d", links, len(targets))
		}
	}
	check(s)
	closeCheck(t, s)
	s = openTest(t, d, Options{})
	check(s)
	closeCheck(t, s)
}

// TestSymlink_BadTargets checks symlink(2)'s errnos for the target: empty
// (ENOENT), a NUL (EINVAL), and a bad name as for any create.
func TestSymlink_BadTargets(t *testing.T) {
	s, _ := openSymlinkTest(t, 4096)
	_, err := s.Symlink(RootIno, "l", "")
	wantErrno(t, "empty target", err, syscall.ENOENT)
	_, err = s.Symlink(RootIno, "l", "a\x00b")
	wantErrno(t, "target with a NUL", err, syscall.EINVAL)
	_, err = s.Symlink(RootIno, "a/b", "t")
	wantErrno(t, "name with a slash", err, syscall.EINVAL)
	_, err = s.Symlink(RootIno, strings.Repeat("n", 256), "t")
	wantErrno(t, "name of 256 bytes", err, syscall.ENAMETOOLONG)
	if _, err := s.Lookup(RootIno, "l"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("a refused symlink left a name: %v", err)
	}
	closeCheck(t, s)
}

// TestSymlink_TargetLimit: the longest target fits, one byte more is
// ENAMETOOLONG and changes nothing, at the smallest node size and at the
// default — the limit the docs give for each.
func TestSymlink_TargetLimit(t *testing.T) {
	for _, c := range []struct{ nodeSize, max int }{{4096, 965}, {8192, 1989}, {16384, 4037}, {65536, 4095}} {
		s, d := openSymlinkTest(t, c.nodeSize)
		if got := s.SymlinkTargetMax(); got != c.max {
			t.Errorf("node size %d: target max %d, want %d", c.nodeSize, got, c.max)
		}
		long := strings.Repeat("t", c.max)
		if _, err := s.Symlink(RootIno, "max", long); err != nil {
			t.Fatalf("node size %d: a target of %d bytes: %v", c.nodeSize, c.max, err)
		}
		_, err := s.Symlink(RootIno, "over", long+"t")
		wantErrno(t, "a target one byte over the limit", err, syscall.ENAMETOOLONG)
		// The log copies it too: fsync the directory and replay.
		if err := s.Fsync(context.Background(), RootIno, false); err != nil {
			t.Fatal(err)
		}
		if n := s.Stats().FsyncLogged; n != 1 {
			t.Fatalf("node size %d: the directory's fsync was not logged (%d logged)", c.nodeSize, n)
		}
		s, _ = crashReopen(t, d)
		a, err := s.Resolve("/max")
		if err != nil {
			t.Fatalf("node size %d: after replay: %v", c.nodeSize, err)
		}
		if got, err := s.Readlink(a.Ino); err != nil || got != long {
			t.Errorf("node size %d: after replay: %d bytes, %v", c.nodeSize, len(got), err)
		}
		if _, err := s.Resolve("/over"); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("the refused link exists: %v", err)
		}
		closeCheck(t, s)
	}
}

// TestSymlink_Resolve: a path may end at a link (the link itself, as
// lstat) but not go through one (ELOOP: the store never follows).
func TestSymlink_Resolve(t *testing.T) {
	s, _ := openSymlinkTest(t, 4096)
	dir, err := s.Mkdir(RootIno, "d", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(dir.Ino, "f", 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := s.Symlink(RootIno, "l", "d")
	if err != nil {
		t.Fatal(err)
	}
	if a, err := s.Resolve("/l"); err != nil || a.Ino != l.Ino || !a.IsLink() {
		t.Errorf("resolve /l: %+v, %v", a, err)
	}
	_, err = s.Resolve("/l/f")
	wantErrno(t, "resolve through a link", err, syscall.ELOOP)
	_, _, err = s.ResolveParent("/l/g")
	wantErrno(t, "the parent of a path through a link", err, syscall.ELOOP)
	_, err = s.Put(context.Background(), "/l/g", []byte("x"), false)
	wantErrno(t, "put through a link", err, syscall.ELOOP)
	_, err = s.Resolve("/d/f/x")
	wantErrno(t, "resolve through a file", err, syscall.ENOTDIR)
	_, err = s.Get("/l")
	wantErrno(t, "get of a link", err, syscall.EINVAL)
	closeCheck(t, s)
}

// TestSymlink_NotAFile: a link's data is its target, read by Readlink
// only: read, write and a change of size are EINVAL; chmod leaves the
// link's mode as it asks (the store keeps no rule of its own there).
func TestSymlink_NotAFile(t *testing.T) {
	s, _ := openSymlinkTest(t, 4096)
	l, err := s.Symlink(RootIno, "l", "target")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Read(l.Ino, 0, make([]byte, 10))
	wantErrno(t, "read", err, syscall.EINVAL)
	_, err = s.Write(l.Ino, 0, []byte("x"))
	wantErrno(t, "write", err, syscall.EINVAL)
	wantErrno(t, "truncate", s.Truncate(l.Ino, 0), syscall.EINVAL)
	size := uint64(100)
	_, err = s.SetAttr(l.Ino, SetAttr{Size: &size})
	wantErrno(t, "setattr of the size", err, syscall.EINVAL)
	uid := uint32(1234)
	if a, err := s.SetAttr(l.Ino, SetAttr{UID: &uid}); err != nil || a.UID != uid || !a.IsLink() {
		t.Errorf("chown of a link: %+v, %v", a, err)
	}
	if got, err := s.Readlink(l.Ino); err != nil || got != "target" {
		t.Errorf("readlink after the refusals: %q, %v", got, err)
	}
	closeCheck(t, s)
}

// TestSymlink_UnlinkFrees: unlinking a link deletes its inode and its
// target's item; the store checks clean and the inode is gone.
func TestSymlink_UnlinkFrees(t *testing.T) {
	s, _ := openSymlinkTest(t, 4096)
	l, err := s.Symlink(RootIno, "l", strings.Repeat("x", 900))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Unlink(RootIno, "l"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Readlink(l.Ino); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("readlink of an unlinked link: %v", err)
	}
	if _, err := s.fs.Lookup(extentKey(l.Ino, 0)); err == nil {
		t.Error("the unlinked link's target item is still in the tree")
	}
	wantErrno(t, "rmdir of a link", s.Rmdir(RootIno, "l"), syscall.ENOENT)
	closeCheck(t, s)
}

// TestSymlink_RenameAndLink: a link renames as a file does (over a file,
// and a file over it) and takes hard links (Linux allows them): its names
// share one inode and one target.
func TestSymlink_RenameAndLink(t *testing.T) {
	s, d := openSymlinkTest(t, 4096)
	dir, err := s.Mkdir(RootIno, "d", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.Symlink(RootIno, "l", "t")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(dir.Ino, "victim", 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Rename(RootIno, "l", dir.Ino, "victim"); err != nil {
		t.Fatal(err)
	}
	a, err := s.Link(l.Ino, RootIno, "hard")
	if err != nil || a.Nlink != 2 || !a.IsLink() {
		t.Fatalf("link to a link: %+v, %v", a, err)
	}
	wantErrno(t, "rename a link over a directory", s.Rename(RootIno, "hard", RootIno, "d"), syscall.EISDIR)
	es, err := s.ReadDir(RootIno, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Name == "hard" && e.Type != TypeLink {
			t.Errorf("hard link's entry type %d", e.Type)
		}
	}
	closeCheck(t, s)
	s = openTest(t, d, Options{})
	for _, p := range []string{"/d/victim", "/hard"} {
		a, err := s.Resolve(p)
		if err != nil || a.Ino != l.Ino || a.Nlink != 2 {
			t.Errorf("%s: %+v, %v", p, a, err)
			continue
		}
		if got, err := s.Readlink(a.Ino); err != nil || got != "t" {
			t.Errorf("readlink %s: %q, %v", p, got, err)
		}
	}
	if err := s.Unlink(RootIno, "hard"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Readlink(l.Ino); err != nil || got != "t" {
		t.Errorf("readlink with one name left: %q, %v", got, err)
	}
	closeCheck(t, s)
}

// TestSymlink_FsyncLink: an fsync of the link itself logs it with its
// target and its name; replay brings both back.
func TestSymlink_FsyncLink(t *testing.T) {
	s, d := openSymlinkTest(t, 4096)
	dir, err := s.Mkdir(RootIno, "d", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	l, err := s.Symlink(dir.Ino, "l", "some/target")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Fsync(context.Background(), l.Ino, false); err != nil {
		t.Fatal(err)
	}
	if n := s.Stats().FsyncLogged; n == 0 {
		t.Errorf("the link's fsync did not log (stats %+v)", s.Stats())
	}
	s, _ = crashReopen(t, d)
	a, err := s.Resolve("/d/l")
	if err != nil || a.Ino != l.Ino {
		t.Fatalf("after replay: %+v, %v", a, err)
	}
	if got, err := s.Readlink(a.Ino); err != nil || got != "some/target" {
		t.Errorf("after replay: %q, %v", got, err)
	}
	closeCheck(t, s)
}

// TestSymlink_CheckFindsBadLink: fsck reports a link without its target,
// one whose target's length is not its size, and one with a second extent.
func TestSymlink_CheckFindsBadLink(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(s *Store, tr *engine.Trans, ino Ino) error
	}{
		{"no target", func(s *Store, tr *engine.Trans, ino Ino) error {
			return s.fs.DeleteItem(tr, extentKey(ino, 0))
		}},
		{"short target", func(s *Store, tr *engine.Trans, ino Ino) error {
			return s.fs.ResizeItem(tr, extentKey(ino, 0), engine.FileExtentInlineSize(3))
		}},
		{"second extent", func(s *Store, tr *engine.Trans, ino Ino) error {
			x := engine.FileExtent{Generation: tr.ID(), Type: engine.ExtentInline, Data: []byte("more")}
			return s.fs.InsertItem(tr, extentKey(ino, blockSize), x.Encode(nil))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := openSymlinkTest(t, 4096)
			l, err := s.Symlink(RootIno, "l", "target")
			if err != nil {
				t.Fatal(err)
			}
			tr, err := s.e.Start()
			if err != nil {
				t.Fatal(err)
			}
			err = c.damage(s, tr, l.Ino)
			tr.End()
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			err = s.Check()
			if err == nil || !strings.Contains(err.Error(), "symbolic link") {
				t.Errorf("fsck: %v, want a symbolic link problem", err)
			}
			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}
