package store

import (
	"context"
	"sync"
	"syscall"
	"testing"
)

// RENAME_NOREPLACE: EEXIST whatever the target is (a file, a directory,
// another name of the same inode, the name itself), nothing changed; a
// free target renames as a plain rename does.
func TestStore_Rename_NoReplace(t *testing.T) {
	fx := newPosixFix(t)
	s := fx.s
	if _, err := s.Link(fx.f, fx.d, "f2"); err != nil {
		t.Fatal(err)
	}
	before := posixTree(t, s)
	for _, c := range []struct {
		sd       Ino
		sn       string
		dd       Ino
		dn, what string
	}{
		{RootIno, "f", RootIno, "g", "file over a file"},
		{RootIno, "f", RootIno, "e", "file over a directory"},
		{RootIno, "e", fx.d, "sub", "directory over a directory"},
		{RootIno, "f", fx.d, "f2", "over another name of the same inode"},
		{RootIno, "f", RootIno, "f", "onto itself"},
		{RootIno, "d", fx.sub, "x", "a directory under itself, onto a name that exists (EEXIST first, as Linux)"},
	} {
		posixWantErr(t, c.what, s.Rename2(c.sd, c.sn, c.dd, c.dn, RenameNoReplace), syscall.EEXIST)
		if d := posixDiff(before, posixTree(t, s)); d != "" {
			t.Fatalf("%s changed the tree:\n%s", c.what, d)
		}
	}
	posixWantErr(t, "missing source", s.Rename2(RootIno, "nope", RootIno, "new", RenameNoReplace), syscall.ENOENT)
	posixWantErr(t, "a directory under itself", s.Rename2(RootIno, "d", fx.sub, "new", RenameNoReplace), syscall.EINVAL)
	if err := s.Rename2(RootIno, "f", fx.e, "moved", RenameNoReplace); err != nil {
		t.Fatal(err)
	}
	if a, err := s.Lookup(fx.e, "moved"); err != nil || a.Ino != fx.f {
		t.Fatalf("moved: %+v %v", a, err)
	}
	if _, err := s.Lookup(RootIno, "f"); err == nil {
		t.Fatal("the old name is still there")
	}
	closeCheck(t, s)
}

// NOREPLACE decides under the rename's locks: of two renames racing to one
// free name, exactly one wins and the other gets EEXIST; both sources
// survive.
func TestStore_Rename_NoReplaceRace(t *testing.T) {
	d := newTestDevice(t, 32<<20)
	s := openTest(t, d, Options{})
	for round := range 20 {
		a, _ := s.Create(RootIno, "a", 0o644)
		b, _ := s.Create(RootIno, "b", 0o644)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, n := range []string{"a", "b"} {
			wg.Go(func() { errs[i] = s.Rename2(RootIno, n, RootIno, "target", RenameNoReplace) })
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			if err == nil {
				won++
			} else {
				posixWantErr(t, "the loser", err, syscall.EEXIST)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d renames won (%v)", round, won, errs)
		}
		tg, err := s.Lookup(RootIno, "target")
		if err != nil || (tg.Ino != a.Ino && tg.Ino != b.Ino) {
			t.Fatalf("round %d: target %+v %v", round, tg, err)
		}
		for _, n := range []string{"a", "b", "target"} {
			if err := s.Unlink(RootIno, n); err != nil && n == "target" {
				t.Fatal(err)
			}
		}
	}
	closeCheck(t, s)
}

// RENAME_EXCHANGE of a file and a directory across two directories: both
// names stay, naming the other inode; the directory's '..' is its new
// parent, the parents' link counts follow it, their sizes do not change;
// a remount and fsck agree.
func TestStore_Rename_ExchangeFileDir(t *testing.T) {
	d := newTestDevice(t, 32<<20)
	s := openTest(t, d, Options{})
	a, _ := s.Mkdir(RootIno, "a", 0o755)
	b, _ := s.Mkdir(RootIno, "b", 0o755)
	f, _ := s.Create(a.Ino, "f", 0o644)
	posixWrite(t, s, f.Ino, 0, posixPattern(6000, 3))
	sub, _ := s.Mkdir(b.Ino, "sub", 0o755)
	inner, _ := s.Create(sub.Ino, "inner", 0o644)
	check := func(when string) {
		t.Helper()
		if got, err := s.Lookup(a.Ino, "f"); err != nil || got.Ino != sub.Ino || !got.IsDir() {
			t.Fatalf("%s: a/f = %+v %v, want the directory %d", when, got, err, sub.Ino)
		}
		if got, err := s.Lookup(b.Ino, "sub"); err != nil || got.Ino != f.Ino || got.IsDir() {
			t.Fatalf("%s: b/sub = %+v %v, want the file %d", when, got, err, f.Ino)
		}
		if got, err := s.Resolve("/a/f/inner"); err != nil || got.Ino != inner.Ino {
			t.Fatalf("%s: /a/f/inner = %+v %v", when, got, err)
		}
		if p, err := s.parentOf(sub.Ino); err != nil || p != a.Ino {
			t.Fatalf("%s: '..' of the moved directory: %d %v, want %d", when, p, err, a.Ino)
		}
		for _, c := range []struct {
			ino         Ino
			nlink, size uint32
		}{{a.Ino, 3, 1}, {b.Ino, 2, 1}, {RootIno, 4, 2}} {
			st, err := s.Stat(c.ino)
			if err != nil || st.Nlink != c.nlink || st.Size != uint64(c.size) {
				t.Fatalf("%s: dir %d nlink %d size %d (%v), want %d, %d", when, c.ino, st.Nlink, st.Size, err, c.nlink, c.size)
			}
		}
		if got := posixReadAll(t, s, f.Ino); string(got) != string(posixPattern(6000, 3)) {
			t.Fatalf("%s: the file's data changed", when)
		}
	}
	if err := s.Rename2(a.Ino, "f", b.Ino, "sub", RenameExchange); err != nil {
		t.Fatal(err)
	}
	check("after the exchange")
	if err := syncCheck(s); err != nil {
		t.Fatalf("fsck: %v", err)
	}
	closeCheck(t, s)
	s = openTest(t, d, Options{})
	check("after a remount")
	closeCheck(t, s)
}

// Exchanges of every kind of pair: two files in one directory, two
// directories across directories (their '..' both change, the link counts
// not), and exchanging back restores the tree.
func TestStore_Rename_ExchangeKinds(t *testing.T) {
	fx := newPosixFix(t)
	s := fx.s
	sub2, _ := s.Mkdir(fx.e, "sub2", 0o755)
	afterMkdir := posixTree(t, s)
	for _, c := range []struct {
		sd       Ino
		sn       string
		dd       Ino
		dn, what string
	}{
		{RootIno, "f", RootIno, "g", "two files in one directory"},
		{fx.d, "sub", fx.e, "sub2", "two directories across directories"},
		{RootIno, "f", fx.sub, "x", "two files across directories"},
		{RootIno, "d", RootIno, "e", "two directories in one directory"},
	} {
		if err := s.Rename2(c.sd, c.sn, c.dd, c.dn, RenameExchange); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if err := syncCheck(s); err != nil {
			t.Fatalf("%s: fsck: %v", c.what, err)
		}
		if posixDiff(afterMkdir, posixTree(t, s)) == "" {
			t.Fatalf("%s changed nothing", c.what)
		}
		if err := s.Rename2(c.sd, c.sn, c.dd, c.dn, RenameExchange); err != nil {
			t.Fatalf("%s, back: %v", c.what, err)
		}
		if d := posixDiff(afterMkdir, posixTree(t, s)); d != "" {
			t.Fatalf("%s and back:\n%s", c.what, d)
		}
	}
	if p, err := s.parentOf(sub2.Ino); err != nil || p != fx.e {
		t.Fatalf("sub2's parent %d %v", p, err)
	}
	closeCheck(t, s)
}

// EXCHANGE's errors, each with nothing changed: a missing name (ENOENT),
// both flags or an unknown flag (EINVAL), a directory into its own subtree
// either way (EINVAL); names of one inode exchange to no effect.
func TestStore_Rename_ExchangeErrors(t *testing.T) {
	fx := newPosixFix(t)
	s := fx.s
	if _, err := s.Link(fx.f, fx.d, "f2"); err != nil {
		t.Fatal(err)
	}
	before := posixTree(t, s)
	for _, c := range []struct {
		sd    Ino
		sn    string
		dd    Ino
		dn    string
		flags uint32
		want  syscall.Errno
		what  string
	}{
		{RootIno, "f", RootIno, "nope", RenameExchange, syscall.ENOENT, "missing target"},
		{RootIno, "nope", RootIno, "f", RenameExchange, syscall.ENOENT, "missing source"},
		{RootIno, "f", RootIno, "g", RenameExchange | RenameNoReplace, syscall.EINVAL, "both flags"},
		{RootIno, "f", RootIno, "g", 4, syscall.EINVAL, "RENAME_WHITEOUT"},
		{RootIno, "f", RootIno, "g", 1 << 20, syscall.EINVAL, "an unknown flag"},
		{RootIno, "d", fx.sub, "x", RenameExchange, syscall.EINVAL, "a directory into its subtree"},
		{fx.sub, "x", RootIno, "d", RenameExchange, syscall.EINVAL, "its subtree's file with the directory"},
		{RootIno, "d", fx.d, "sub", RenameExchange, syscall.EINVAL, "a directory with its child"},
	} {
		posixWantErr(t, c.what, s.Rename2(c.sd, c.sn, c.dd, c.dn, c.flags), c.want)
		if d := posixDiff(before, posixTree(t, s)); d != "" {
			t.Fatalf("%s changed the tree:\n%s", c.what, d)
		}
	}
	for _, c := range [][4]any{{RootIno, "f", fx.d, "f2"}, {RootIno, "f", RootIno, "f"}} {
		if err := s.Rename2(c[0].(Ino), c[1].(string), c[2].(Ino), c[3].(string), RenameExchange); err != nil {
			t.Fatalf("exchange of one inode's names: %v", err)
		}
		if d := posixDiff(before, posixTree(t, s)); d != "" {
			t.Fatalf("exchange of one inode's names changed the tree:\n%s", d)
		}
	}
	closeCheck(t, s)
}

// syncCheck commits and checks s: fsck reads the committed tree.
func syncCheck(s *Store) error {
	if err := s.Sync(context.Background()); err != nil {
		return err
	}
	return s.Check()
}
