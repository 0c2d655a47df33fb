package store

import (
	"context"
	"errors"
	"math"
	"syscall"
	"testing"
	"time"
)

// TestSetAttr_Times_Clamped: times outside the store's range are clamped
// to it, as Linux clamps to a filesystem's s_time_min and s_time_max, and
// stay so after a remount; times inside it are kept to the nanosecond.
func TestSetAttr_Times_Clamped(t *testing.T) {
	d := newTestDevice(t, 16<<20)
	s := openTest(t, d, Options{})
	a, err := s.Create(RootIno, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := time.Unix(TimeSecMin, 0), time.Unix(TimeSecMax, 0)
	for _, c := range []struct {
		name         string
		atime, mtime time.Time
		wantA, wantM time.Time
	}{
		{"the int64 extremes", time.Unix(math.MinInt64, 0), time.Unix(math.MaxInt64, 999999999), lo, hi},
		{"just outside", time.Unix(TimeSecMin-1, 5), time.Unix(TimeSecMax+1, 5), lo, hi},
		{"the bounds", time.Unix(TimeSecMin, 7), time.Unix(TimeSecMax, 999999999), time.Unix(TimeSecMin, 7), time.Unix(TimeSecMax, 999999999)},
		{"ordinary", time.Unix(1700000000, 123456789), time.Unix(-1, 1), time.Unix(1700000000, 123456789), time.Unix(-1, 1)},
	} {
		got, err := s.SetAttr(a.Ino, SetAttr{Atime: &c.atime, Mtime: &c.mtime})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !got.Atime.Equal(c.wantA) || !got.Mtime.Equal(c.wantM) {
			t.Fatalf("%s: atime %v mtime %v, want %v %v", c.name, got.Atime.UTC(), got.Mtime.UTC(), c.wantA.UTC(), c.wantM.UTC())
		}
	}
	ext := time.Unix(math.MinInt64, 0)
	if _, err := s.SetAttr(a.Ino, SetAttr{Atime: &ext, Mtime: &ext}); err != nil {
		t.Fatal(err)
	}
	closeCheck(t, s)
	s = openTest(t, d, Options{})
	got, err := s.Stat(a.Ino)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Atime.Equal(lo) || !got.Mtime.Equal(lo) {
		t.Fatalf("after a remount: atime %v mtime %v, want %v", got.Atime.UTC(), got.Mtime.UTC(), lo.UTC())
	}
	closeCheck(t, s)
}

// TestFsync_Deleted_ENOENT: fsync of a deleted inode answers ENOENT as
// stat and read do, on the lock-free fast path (its deletion committed)
// as on the slow one (not yet).
func TestFsync_Deleted_ENOENT(t *testing.T) {
	s := openTest(t, newTestDevice(t, 16<<20), Options{})
	ctx := context.Background()
	for _, commit := range []bool{false, true} {
		a, err := s.Create(RootIno, "f", 0o644)
		if err != nil {
			t.Fatal(err)
		}
		posixWrite(t, s, a.Ino, 0, []byte("data"))
		if err := s.Fsync(ctx, a.Ino, false); err != nil {
			t.Fatal(err)
		}
		if err := s.Unlink(RootIno, "f"); err != nil {
			t.Fatal(err)
		}
		if commit {
			if err := s.Sync(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Stat(a.Ino); !errors.Is(err, syscall.ENOENT) {
			t.Fatalf("stat: %v", err)
		}
		posixWantErr(t, "fsync of a deleted file", s.Fsync(ctx, a.Ino, false), syscall.ENOENT)
		posixWantErr(t, "fdatasync of a deleted file", s.Fsync(ctx, a.Ino, true), syscall.ENOENT)
	}
	closeCheck(t, s)
}
