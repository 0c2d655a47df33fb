package store

import (
	"bytes"
	"context"
	"errors"
	"syscall"
	"testing"

	"ustore/dev/memdev"
)

// orphanFile creates /name with n bytes of data, synced, and returns its
// inode and data.
func orphanFile(t *testing.T, s *Store, name string, n int) (Ino, []byte) {
	t.Helper()
	a, err := s.Create(RootIno, name, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	data := crashData(7, 0, n)
	if _, err := s.Write(a.Ino, 0, data); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	return a.Ino, data
}

// usedBlocks is the device's used blocks after a sync (freed space is
// pinned until the commit that frees it is durable).
func usedBlocks(t *testing.T, s *Store) uint64 {
	t.Helper()
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := s.StatFS()
	return st.Blocks - st.BlocksFree
}

// TestStore_Open_UnlinkWhileOpen: an unlinked open file keeps its data and
// answers reads, writes, truncate, setattr and fsync by number, its space
// taken until the last release frees it, and fsck is clean throughout.
func TestStore_Open_UnlinkWhileOpen(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, newTestDevice(t, 64<<20), Options{})
	defer closeCheck(t, s)
	empty := usedBlocks(t, s)
	ino, data := orphanFile(t, s, "f", 1<<20)
	full := usedBlocks(t, s)
	if full < empty+(1<<20)/blockSize {
		t.Fatalf("used %d blocks with the file, %d without", full, empty)
	}
	if _, err := s.Open(ino); err != nil {
		t.Fatal(err)
	}
	if err := s.Unlink(RootIno, "f"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lookup(RootIno, "f"); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("lookup after unlink: %v", err)
	}
	a, err := s.Stat(ino)
	if err != nil || a.Nlink != 0 {
		t.Fatalf("stat of the orphan: %+v, %v", a, err)
	}
	got := make([]byte, len(data))
	if n, err := s.Read(ino, 0, got); err != nil || n != len(data) || !bytes.Equal(got, data) {
		t.Fatalf("read of the orphan: %d, %v", n, err)
	}
	more := crashData(8, 0, 5000)
	if _, err := s.Write(ino, uint64(len(data)), more); err != nil {
		t.Fatal(err)
	}
	if err := s.Fsync(ctx, ino, false); err != nil {
		t.Fatal(err)
	}
	if n := s.Stats().FsyncFallbacks["unlinked"]; n != 1 {
		t.Fatalf("fsync of an orphan: %d unlinked fallbacks, want 1", n)
	}
	mode := uint32(0o600)
	if a, err := s.SetAttr(ino, SetAttr{Mode: &mode}); err != nil || a.Mode&ModePerm != 0o600 || a.Nlink != 0 {
		t.Fatalf("setattr of the orphan: %+v, %v", a, err)
	}
	if _, err := s.Link(ino, RootIno, "back"); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("link of an orphan: %v, want ENOENT", err)
	}
	if used := usedBlocks(t, s); used < full {
		t.Fatalf("space freed before the release: %d blocks used, %d with the file", used, full)
	}
	if err := s.Check(); err != nil {
		t.Fatalf("fsck with an orphan: %v", err)
	}
	if inos, err := s.orphans(); err != nil || len(inos) != 1 || inos[0] != ino {
		t.Fatalf("orphan items %v, %v; want [%d]", inos, err, ino)
	}
	if err := s.Truncate(ino, 4096); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ino); err != nil {
		t.Fatal(err)
	}
	if used := usedBlocks(t, s); used > empty+2 {
		t.Fatalf("after the release %d blocks used, %d before the file", used, empty)
	}
	if _, err := s.Stat(ino); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("stat after the release: %v", err)
	}
	if inos, err := s.orphans(); err != nil || len(inos) != 0 {
		t.Fatalf("orphan items after the release: %v, %v", inos, err)
	}
	wantErrno(t, "second release", s.Release(ino), syscall.EBADF)
}

// TestStore_Open_RenameOver: a rename over an open file's last name makes
// it an orphan; its data stays readable until the release.
func TestStore_Open_RenameOver(t *testing.T) {
	s := openTest(t, newTestDevice(t, 64<<20), Options{})
	defer closeCheck(t, s)
	ino, data := orphanFile(t, s, "old", 40000)
	src, _ := orphanFile(t, s, "new", 100)
	if _, err := s.Open(ino); err != nil {
		t.Fatal(err)
	}
	if err := s.Rename(RootIno, "new", RootIno, "old"); err != nil {
		t.Fatal(err)
	}
	if a, err := s.Lookup(RootIno, "old"); err != nil || a.Ino != src {
		t.Fatalf("old names %d, %v; want %d", a.Ino, err, src)
	}
	got := make([]byte, len(data))
	if n, err := s.Read(ino, 0, got); err != nil || n != len(data) || !bytes.Equal(got, data) {
		t.Fatalf("read of the replaced file: %d, %v", n, err)
	}
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ino); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(ino); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("stat after the release: %v", err)
	}
}

// TestStore_Open_TwoHolds: the orphan lives until the second release.
func TestStore_Open_TwoHolds(t *testing.T) {
	s := openTest(t, newTestDevice(t, 64<<20), Options{})
	defer closeCheck(t, s)
	ino, _ := orphanFile(t, s, "f", 9000)
	for range 2 {
		if _, err := s.Open(ino); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Unlink(RootIno, "f"); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ino); err != nil {
		t.Fatal(err)
	}
	if a, err := s.Stat(ino); err != nil || a.Size != 9000 {
		t.Fatalf("after one of two releases: %+v, %v", a, err)
	}
	if err := s.Release(ino); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(ino); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("after both releases: %v", err)
	}
}

// TestStore_Open_Errors: a directory cannot be held, nor an inode that is
// gone.
func TestStore_Open_Errors(t *testing.T) {
	s := openTest(t, newTestDevice(t, 64<<20), Options{})
	defer closeCheck(t, s)
	_, err := s.Open(RootIno)
	wantErrno(t, "open of a directory", err, syscall.EISDIR)
	_, err = s.Open(999999)
	wantErrno(t, "open of a missing inode", err, syscall.ENOENT)
	ino, _ := orphanFile(t, s, "f", 10)
	if err := s.Unlink(RootIno, "f"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Open(ino)
	wantErrno(t, "open of a deleted inode", err, syscall.ENOENT)
}

// TestStore_Release_WithNames: releasing a file that still has a name
// frees nothing; a release without a hold is EBADF.
func TestStore_Release_WithNames(t *testing.T) {
	s := openTest(t, newTestDevice(t, 64<<20), Options{})
	defer closeCheck(t, s)
	ino, data := orphanFile(t, s, "f", 20000)
	wantErrno(t, "release without a hold", s.Release(ino), syscall.EBADF)
	if _, err := s.Open(ino); err != nil {
		t.Fatal(err)
	}
	before := usedBlocks(t, s)
	if err := s.Release(ino); err != nil {
		t.Fatal(err)
	}
	if used := usedBlocks(t, s); used != before {
		t.Fatalf("release of a named file: %d blocks used, %d before", used, before)
	}
	got := make([]byte, len(data))
	if n, err := s.Read(ino, 0, got); err != nil || n != len(data) || !bytes.Equal(got, data) {
		t.Fatalf("read after the release: %d, %v", n, err)
	}
	wantErrno(t, "second release", s.Release(ino), syscall.EBADF)
}

// TestStore_Open_NotEvicted: a held inode stays in the table however
// many others pass through it, and keeps its hold.
func TestStore_Open_NotEvicted(t *testing.T) {
	s := openTest(t, newTestDevice(t, 64<<20), Options{CacheBytes: 256 << 10})
	defer closeCheck(t, s)
	ino, _ := orphanFile(t, s, "f", 100)
	if _, err := s.Open(ino); err != nil {
		t.Fatal(err)
	}
	if err := s.Unlink(RootIno, "f"); err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		if _, err := s.Create(RootIno, "g"+string(rune('a'+i%26))+string(rune('a'+i/26)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if cs := s.CacheStats(); cs.InodeEvictions == 0 {
		t.Fatalf("%+v: 500 creates through a 256 KiB cache evicted no inode; the test tests nothing", cs)
	}
	if err := s.Release(ino); err != nil {
		t.Fatalf("release after the table turned over: %v", err)
	}
}

// TestStore_Open_MountFreesOrphans: a store closed (or crashed) with an
// orphan frees it at the next mount: no orphan item, no space taken,
// fsck clean.
func TestStore_Open_MountFreesOrphans(t *testing.T) {
	ctx := context.Background()
	d := newTestDevice(t, 64<<20)
	s := openTest(t, d, Options{})
	empty := usedBlocks(t, s)
	ino, _ := orphanFile(t, s, "f", 1<<20)
	if _, err := s.Open(ino); err != nil {
		t.Fatal(err)
	}
	if err := s.Unlink(RootIno, "f"); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	crashed := d.Crash(memdev.KeepNone())
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, dd := range []*memdev.Device{d, crashed} {
		s2 := openTest(t, dd, Options{})
		if n := s2.OrphansFreed(); n != 1 {
			t.Errorf("mount freed %d orphans, want 1", n)
		}
		if inos, err := s2.orphans(); err != nil || len(inos) != 0 {
			t.Errorf("orphan items after mount: %v, %v", inos, err)
		}
		if _, err := s2.Stat(ino); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("the orphan after mount: %v", err)
		}
		if used := usedBlocks(t, s2); used > empty+2 {
			t.Errorf("after mount %d blocks used, %d before the file", used, empty)
		}
		closeCheck(t, s2)
	}
}

// TestStore_Check_Orphans: fsck wants an orphan item's inode at nlink 0,
// and an nlink-0 inode to have one.
func TestStore_Check_Orphans(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, newTestDevice(t, 64<<20), Options{})
	defer s.Close(ctx)
	ino, _ := orphanFile(t, s, "f", 100)
	other, _ := orphanFile(t, s, "g", 100)
	if _, err := s.Open(ino); err != nil {
		t.Fatal(err)
	}
	if err := s.Unlink(RootIno, "f"); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	// An orphan item for a named file, and the orphan's item gone.
	tr, err := s.e.Start()
	if err != nil {
		t.Fatal(err)
	}
	err = errors.Join(s.fs.InsertItem(tr, orphanKey(other), nil), s.fs.DeleteItem(tr, orphanKey(ino)))
	tr.End()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.e.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	err = s.Check()
	for _, want := range []string{"orphan item for inode", "has no name"} {
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("fsck: %v, want %q", err, want)
		}
	}
}
