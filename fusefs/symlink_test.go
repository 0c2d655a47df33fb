package fusefs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"ustore/client"
	"ustore/fusefs"
)

// TestMount_SymlinkLimit: the store's own limit (4,037 bytes at the
// default 16 KiB nodes, below the kernel's PATH_MAX − 1) reaches the
// program as ENAMETOOLONG, which the POSIX suite cannot compare with the
// kernel's filesystem (it takes 4,095); and a link another client made is
// a link through the mount: lstat, readlink, and the kernel follows it.
func TestMount_SymlinkLimit(t *testing.T) {
	mnt, c := mountStoreClient(t, fusefs.Options{})
	ctx := context.Background()
	if err := os.Symlink(strings.Repeat("t", 4037), filepath.Join(mnt, "max")); err != nil {
		t.Fatalf("a 4037-byte target: %v", err)
	}
	err := os.Symlink(strings.Repeat("t", 4038), filepath.Join(mnt, "over"))
	if !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Fatalf("a 4038-byte target: %v, want ENAMETOOLONG", err)
	}
	if _, err := os.Lstat(filepath.Join(mnt, "over")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused link exists: %v", err)
	}
	a, err := c.Resolve(ctx, "/max")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Readlink(ctx, a.Ino); err != nil || got != strings.Repeat("t", 4037) {
		t.Fatalf("the store's target: %d bytes, %v", len(got), err)
	}

	// Made by another client, seen through the mount.
	if err := os.WriteFile(filepath.Join(mnt, "f"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Symlink(ctx, client.RootIno, "other", "f"); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(mnt, "other"), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK || st.Size != 1 {
		t.Fatalf("lstat of another client's link: %+v, %v", st, err)
	}
	if got, err := os.Readlink(filepath.Join(mnt, "other")); err != nil || got != "f" {
		t.Fatalf("readlink: %q, %v", got, err)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "other")); err != nil || string(b) != "data" {
		t.Fatalf("read through the link: %q, %v", b, err)
	}
}
