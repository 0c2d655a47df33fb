package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"ustore/dev/memdev"
	"ustore/engine"
)

// xattrFix is a fresh store with one file, checked on the way out.
func xattrFix(t *testing.T) (*Store, Ino) {
	t.Helper()
	s := openTest(t, newTestDevice(t, 64<<20), Options{})
	t.Cleanup(func() { closeCheck(t, s) })
	a, err := s.Create(RootIno, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	return s, a.Ino
}

// wantXattrs requires that ino's attributes are exactly want.
func wantXattrs(t *testing.T, s *Store, ino Ino, want map[string]string) {
	t.Helper()
	names, err := s.ListXattr(ino)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, n := range names {
		v, err := s.GetXattr(ino, n)
		if err != nil {
			t.Fatalf("get %q: %v", n, err)
		}
		got[n] = string(v)
	}
	if len(got) != len(names) || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("inode %d: attributes %v (listed %q), want %v", ino, got, names, want)
	}
}

func TestStore_SetXattr_Flags(t *testing.T) {
	s, ino := xattrFix(t)
	wantErrno(t, "replace absent", s.SetXattr(ino, "user.a", []byte("1"), XattrReplace), syscall.ENODATA)
	wantErrno(t, "create", s.SetXattr(ino, "user.a", []byte("1"), XattrCreate), 0)
	wantErrno(t, "create present", s.SetXattr(ino, "user.a", []byte("2"), XattrCreate), syscall.EEXIST)
	wantErrno(t, "both flags", s.SetXattr(ino, "user.a", []byte("2"), XattrCreate|XattrReplace), syscall.EEXIST)
	wantErrno(t, "both flags, absent", s.SetXattr(ino, "user.b", []byte("2"), XattrCreate|XattrReplace), syscall.ENODATA)
	wantErrno(t, "unknown flag", s.SetXattr(ino, "user.a", []byte("2"), 4), syscall.EINVAL)
	wantXattrs(t, s, ino, map[string]string{"user.a": "1"})
	wantErrno(t, "replace", s.SetXattr(ino, "user.a", []byte("22"), XattrReplace), 0)
	wantErrno(t, "set", s.SetXattr(ino, "user.a", nil, 0), 0)
	wantErrno(t, "set new", s.SetXattr(ino, "user.c", []byte("3"), 0), 0)
	wantXattrs(t, s, ino, map[string]string{"user.a": "", "user.c": "3"})
	if _, err := s.GetXattr(ino, "user.b"); !errors.Is(err, syscall.ENODATA) {
		t.Fatalf("get absent: %v", err)
	}
}

func TestStore_SetXattr_ChangesCtime(t *testing.T) {
	s, ino := xattrFix(t)
	a0, _ := s.Stat(ino)
	if err := s.SetXattr(ino, "user.a", []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	a1, _ := s.Stat(ino)
	if a1.Ctime.Before(a0.Ctime) || a1.Mtime != a0.Mtime {
		t.Fatalf("ctime %v → %v, mtime %v → %v: setxattr changes ctime only", a0.Ctime, a1.Ctime, a0.Mtime, a1.Mtime)
	}
}

func TestStore_SetXattr_Namespaces(t *testing.T) {
	s, ino := xattrFix(t)
	for name, get := range map[string]syscall.Errno{"security.selinux": syscall.ENODATA, "trusted.x": syscall.ENODATA,
		"system.posix_acl_access": syscall.ENODATA, "other.x": syscall.EOPNOTSUPP, "user": syscall.EOPNOTSUPP} {
		wantErrno(t, "set "+name, s.SetXattr(ino, name, []byte("v"), 0), syscall.EOPNOTSUPP)
		wantErrno(t, "remove "+name, s.RemoveXattr(ino, name), syscall.EOPNOTSUPP)
		_, err := s.GetXattr(ino, name)
		wantErrno(t, "get "+name, err, get)
	}
	wantErrno(t, "bare prefix", s.SetXattr(ino, "user.", []byte("v"), 0), syscall.EINVAL)
	wantXattrs(t, s, ino, map[string]string{})
}

func TestStore_SetXattr_Limits(t *testing.T) {
	s, ino := xattrFix(t)
	long := "user." + strings.Repeat("n", engine.XattrNameMax-len("user."))
	wantErrno(t, "longest name", s.SetXattr(ino, long, []byte("v"), 0), 0)
	wantErrno(t, "name too long", s.SetXattr(ino, long+"n", []byte("v"), 0), syscall.ERANGE)
	_, err := s.GetXattr(ino, long+"n")
	wantErrno(t, "get name too long", err, syscall.ERANGE)
	wantErrno(t, "empty name", s.SetXattr(ino, "", []byte("v"), 0), syscall.ERANGE)

	name := "user.big"
	max := s.XattrValueMax(len(name))
	if want := s.Engine().ItemDataMax() - 4 - len(name); max != want || max < 512 {
		t.Fatalf("value limit %d, want %d", max, want)
	}
	big := bytes.Repeat([]byte{7}, max)
	wantErrno(t, "largest value", s.SetXattr(ino, name, big, 0), 0)
	wantErrno(t, "value past the item", s.SetXattr(ino, name, append(big, 1), 0), syscall.ENOSPC)
	wantErrno(t, "value past 64 KiB", s.SetXattr(ino, name, make([]byte, 64<<10+1), 0), syscall.E2BIG)
	got, err := s.GetXattr(ino, name)
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("largest value back: %d bytes, %v", len(got), err)
	}
}

// TestStore_SetXattr_ValueLimitDefault: at the default 16 KiB nodes a
// value of a short name may take about 4 KiB (docs/PROTOCOL.md).
func TestStore_SetXattr_ValueLimitDefault(t *testing.T) {
	d := newTestDevice16K(t)
	s := openTest(t, d, Options{})
	defer closeCheck(t, s)
	a, err := s.Create(RootIno, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.XattrValueMax(len("user.x")); got != 4045 {
		t.Fatalf("value limit of user.x at 16 KiB nodes: %d", got)
	}
	wantErrno(t, "at the limit", s.SetXattr(a.Ino, "user.x", make([]byte, 4045), 0), 0)
	wantErrno(t, "past the limit", s.SetXattr(a.Ino, "user.x", make([]byte, 4046), 0), syscall.ENOSPC)
}

func newTestDevice16K(t *testing.T) *memdev.Device {
	t.Helper()
	d := memdev.New(64 << 20)
	if err := Mkfs(d, MkfsOptions{NodeSize: 16384}); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestStore_SetXattr_ListRemove(t *testing.T) {
	s, ino := xattrFix(t)
	want := map[string]string{}
	for i := range 50 {
		n := fmt.Sprintf("user.attr%02d", i)
		want[n] = strings.Repeat("v", i)
		if err := s.SetXattr(ino, n, []byte(want[n]), XattrCreate); err != nil {
			t.Fatal(err)
		}
	}
	wantXattrs(t, s, ino, want)
	for i := 0; i < 50; i += 2 {
		n := fmt.Sprintf("user.attr%02d", i)
		wantErrno(t, "remove "+n, s.RemoveXattr(ino, n), 0)
		delete(want, n)
	}
	wantErrno(t, "remove absent", s.RemoveXattr(ino, "user.attr00"), syscall.ENODATA)
	wantXattrs(t, s, ino, want)
	// The directory has attributes too.
	wantErrno(t, "set on a directory", s.SetXattr(RootIno, "user.d", []byte("x"), 0), 0)
	wantXattrs(t, s, RootIno, map[string]string{"user.d": "x"})
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}

// xattrCollision finds two user names with the same crc32c: brute force
// over a birthday search (about 2^16 names for a 32-bit hash).
func xattrCollision(t *testing.T) (string, string) {
	t.Helper()
	seen := map[uint64]string{}
	for i := range 1 << 22 {
		n := fmt.Sprintf("user.c%d", i)
		h := nameHash(n)
		if o, ok := seen[h]; ok {
			return o, n
		}
		seen[h] = n
	}
	t.Fatal("no crc32c collision among 4M names")
	return "", ""
}

func TestStore_SetXattr_HashCollision(t *testing.T) {
	s, ino := xattrFix(t)
	a, b := xattrCollision(t)
	if nameHash(a) != nameHash(b) {
		t.Fatalf("%q and %q do not collide", a, b)
	}
	wantErrno(t, "set a", s.SetXattr(ino, a, []byte("A"), XattrCreate), 0)
	_, err := s.GetXattr(ino, b)
	wantErrno(t, "get b before", err, syscall.ENODATA)
	wantErrno(t, "replace b before", s.SetXattr(ino, b, []byte("B"), XattrReplace), syscall.ENODATA)
	wantErrno(t, "set b", s.SetXattr(ino, b, []byte("B"), XattrCreate), 0)
	wantXattrs(t, s, ino, map[string]string{a: "A", b: "B"})
	n := 0
	s.fs.Iterate(xattrKey(ino, a), func(k engine.Key, _ []byte) bool {
		if k.Ino() == ino && k.Type == engine.TypeXattrItem {
			n++
			return true
		}
		return false
	})
	if n != 1 {
		t.Fatalf("%d xattr items for two colliding names, want one shared", n)
	}
	// Their item holds both, so together they have one item's room.
	big := make([]byte, s.XattrValueMax(len(b)))
	wantErrno(t, "b too big beside a", s.SetXattr(ino, b, big, 0), syscall.ENOSPC)
	wantErrno(t, "replace a", s.SetXattr(ino, a, []byte("AA"), XattrReplace), 0)
	wantErrno(t, "remove a", s.RemoveXattr(ino, a), 0)
	wantXattrs(t, s, ino, map[string]string{b: "B"})
	wantErrno(t, "remove b", s.RemoveXattr(ino, b), 0)
	wantXattrs(t, s, ino, map[string]string{})
}

// TestStore_SetXattr_UnlinkRemovesItems: the last name's unlink deletes
// the inode's attribute items with it; a name left keeps them.
func TestStore_SetXattr_UnlinkRemovesItems(t *testing.T) {
	s, ino := xattrFix(t)
	for i := range 20 {
		if err := s.SetXattr(ino, fmt.Sprintf("user.%d", i), make([]byte, 300), 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Link(ino, RootIno, "g"); err != nil {
		t.Fatal(err)
	}
	if err := s.Unlink(RootIno, "f"); err != nil {
		t.Fatal(err)
	}
	if names, err := s.ListXattr(ino); err != nil || len(names) != 20 {
		t.Fatalf("after unlinking one of two names: %d attributes, %v", len(names), err)
	}
	if err := s.Unlink(RootIno, "g"); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	left := 0
	s.fs.Iterate(engine.InoKey(ino, 0, 0), func(k engine.Key, _ []byte) bool {
		if k.Ino() == ino {
			left++
		}
		return k.Ino() == ino
	})
	if left != 0 {
		t.Fatalf("%d items of the deleted inode left", left)
	}
	_, err := s.ListXattr(ino)
	wantErrno(t, "list deleted", err, syscall.ENOENT)
	wantErrno(t, "set deleted", s.SetXattr(ino, "user.a", nil, 0), syscall.ENOENT)
	// A directory's too.
	d, err := s.Mkdir(RootIno, "d", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetXattr(d.Ino, "user.a", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Rmdir(RootIno, "d"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.fs.Lookup(xattrKey(d.Ino, "user.a")); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("rmdir left the directory's xattr item: %v", err)
	}
}

// TestStore_Check_Xattrs: fsck finds an attribute item of a missing inode,
// one outside the user namespace, and one under another name's hash.
func TestStore_Check_Xattrs(t *testing.T) {
	for name, bad := range map[string]func(s *Store, ino Ino) (engine.Key, []byte){
		"no inode": func(s *Store, ino Ino) (engine.Key, []byte) {
			return xattrKey(ino+100, "user.a"), engine.EncodeXattrEntries(nil, engine.XattrEntry{Name: []byte("user.a")})
		},
		"namespace": func(s *Store, ino Ino) (engine.Key, []byte) {
			return xattrKey(ino, "trusted.a"), engine.EncodeXattrEntries(nil, engine.XattrEntry{Name: []byte("trusted.a")})
		},
		"hash": func(s *Store, ino Ino) (engine.Key, []byte) {
			return xattrKey(ino, "user.b"), engine.EncodeXattrEntries(nil, engine.XattrEntry{Name: []byte("user.a")})
		},
		"undecodable": func(s *Store, ino Ino) (engine.Key, []byte) {
			return xattrKey(ino, "user.a"), []byte{9, 0, 0}
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := openTest(t, newTestDevice(t, 64<<20), Options{})
			defer s.Close(context.Background())
			a, err := s.Create(RootIno, "f", 0o644)
			if err != nil {
				t.Fatal(err)
			}
			k, b := bad(s, a.Ino)
			tr, err := s.e.Start()
			if err != nil {
				t.Fatal(err)
			}
			err = s.fs.InsertItem(tr, k, b)
			tr.End()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.e.Commit(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := s.Check(); err == nil {
				t.Fatal("fsck found nothing wrong")
			}
		})
	}
}
