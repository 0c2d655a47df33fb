package store

import (
	"testing"
)

// TestLogReplay_Xattrs: set, replace and remove attributes of a committed
// file, fsync (logged), crash: replay gives exactly the set of the fsync,
// the committed attributes it removed gone.
func TestLogReplay_Xattrs(t *testing.T) {
	f := rpNew(t, 64<<20)
	ino := f.create(RootIno, "f")
	for _, n := range []string{"user.keep", "user.gone", "user.changed"} {
		if err := f.s.SetXattr(ino, n, []byte("old "+n), 0); err != nil {
			t.Fatal(err)
		}
	}
	f.sync()
	if err := f.s.RemoveXattr(ino, "user.gone"); err != nil {
		t.Fatal(err)
	}
	if err := f.s.SetXattr(ino, "user.changed", []byte("new"), XattrReplace); err != nil {
		t.Fatal(err)
	}
	if err := f.s.SetXattr(ino, "user.added", []byte("added"), XattrCreate); err != nil {
		t.Fatal(err)
	}
	f.fsyncLogged(ino)
	// After the fsync: not durable.
	if err := f.s.SetXattr(ino, "user.later", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	f.crash()
	wantXattrs(t, f.s, f.lookup(RootIno, "f"), map[string]string{
		"user.keep": "old user.keep", "user.changed": "new", "user.added": "added"})
}

// TestLogReplay_XattrsTwiceInOneTransaction: the second fsync of the
// transaction replaces the first's logged set; a removal of everything
// replays as no attributes.
func TestLogReplay_XattrsTwiceInOneTransaction(t *testing.T) {
	f := rpNew(t, 64<<20)
	ino := f.create(RootIno, "f")
	if err := f.s.SetXattr(ino, "user.c", []byte("committed"), 0); err != nil {
		t.Fatal(err)
	}
	f.sync()
	if err := f.s.SetXattr(ino, "user.a", []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	f.fsyncLogged(ino)
	for _, n := range []string{"user.a", "user.c"} {
		if err := f.s.RemoveXattr(ino, n); err != nil {
			t.Fatal(err)
		}
	}
	f.fsyncLogged(ino)
	f.crash()
	wantXattrs(t, f.s, f.lookup(RootIno, "f"), map[string]string{})
}

// TestLogReplay_XattrsNewFileAndDir: attributes of a file and a directory
// created in the running transaction, and of a colliding pair, come back
// with their fsync; an inode whose attributes changed but was not fsynced
// keeps its committed set.
func TestLogReplay_XattrsNewFileAndDir(t *testing.T) {
	f := rpNew(t, 64<<20)
	other := f.create(RootIno, "other")
	if err := f.s.SetXattr(other, "user.o", []byte("committed"), 0); err != nil {
		t.Fatal(err)
	}
	f.sync()
	d := f.mkdir(RootIno, "d")
	ino := f.create(d, "f")
	a, b := xattrCollision(t)
	for _, n := range []string{a, b} {
		if err := f.s.SetXattr(ino, n, []byte(n), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.s.SetXattr(d, "user.dir", []byte("d"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.s.SetXattr(other, "user.o", []byte("not fsynced"), 0); err != nil {
		t.Fatal(err)
	}
	f.fsyncLogged(ino)
	f.fsyncLogged(d)
	f.crash()
	d = f.lookup(RootIno, "d")
	wantXattrs(t, f.s, f.lookup(d, "f"), map[string]string{a: a, b: b})
	wantXattrs(t, f.s, d, map[string]string{"user.dir": "d"})
	wantXattrs(t, f.s, f.lookup(RootIno, "other"), map[string]string{"user.o": "committed"})
}

// TestLogReplay_XattrsOnlyChange: an attribute change is the only change
// since the commit: fsync still logs it (the inode's change count moved),
// and a second fsync with nothing new is answered from the log.
func TestLogReplay_XattrsOnlyChange(t *testing.T) {
	f := rpNew(t, 64<<20)
	ino := f.create(RootIno, "f")
	f.sync()
	if err := f.s.SetXattr(ino, "user.a", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	f.fsyncLogged(ino)
	if got := f.fsync(ino); got != "in log" {
		t.Fatalf("second fsync: %s, want in log", got)
	}
	f.crash()
	wantXattrs(t, f.s, f.lookup(RootIno, "f"), map[string]string{"user.a": "v"})
}
