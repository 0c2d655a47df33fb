package store

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"syscall"
	"testing"

	"ustore/dev"
	"ustore/dev/memdev"
)

// testLogger keeps tests quiet; failures are reported by the tests.
var testLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// newTestDevice formats a memdev of size bytes.
func newTestDevice(t testing.TB, size int64) *memdev.Device {
	t.Helper()
	d := memdev.New(size)
	if err := Mkfs(d, MkfsOptions{NodeSize: 4096}); err != nil {
		t.Fatal(err)
	}
	return d
}

// openTest opens a store on d with small budgets, closed (and checked) at
// the end of the test.
func openTest(t testing.TB, d dev.Device, opts Options) *Store {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger
	}
	s, err := Open(d, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// openWithFile opens a store on a new memdev of devSize bytes with one
// empty file, /f, and returns the store and the file's inode; the caller
// closes the store (closeCheck).
func openWithFile(t testing.TB, devSize int64, opts Options) (*Store, Ino) {
	t.Helper()
	s := openTest(t, newTestDevice(t, devSize), opts)
	f, err := s.Create(RootIno, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	return s, f.Ino
}

// closeCheck syncs, checks and closes s.
func closeCheck(t testing.TB, s *Store) {
	t.Helper()
	if err := s.Sync(context.Background()); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if err := s.Check(); err != nil {
		t.Fatalf("fsck: %v", err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatalf("close: %v", err)
	}
}

// wantErrno fails the test at once unless err wraps want (nil, for want
// 0).
func wantErrno(t *testing.T, what string, err error, want syscall.Errno) {
	t.Helper()
	if want == 0 {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("%s: %v, want %v", what, err, want)
	}
}
