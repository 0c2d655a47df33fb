package devopen

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLockDevice_Exclusive: one lock per device; the error names the path.
func TestLockDevice_Exclusive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dev.img")
	os.WriteFile(path, nil, 0o644)
	l, err := LockDevice(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = LockDevice(path)
	if !errors.Is(err, ErrDeviceInUse) || !strings.Contains(err.Error(), path) {
		t.Fatalf("second lock: %v", err)
	}
	l.Close()
	l2, err := LockDevice(path)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	l2.Close()
}

// TestCreateLocked_RenameKeepsLock: a file created locked and renamed into
// place is still locked under its new name, until Close.
func TestCreateLocked_RenameKeepsLock(t *testing.T) {
	dir := t.TempDir()
	tmp, path := filepath.Join(dir, "dev.img.mkfs"), filepath.Join(dir, "dev.img")
	l, err := CreateLocked(tmp, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(tmp); err != nil || fi.Mode().Perm()&^0o600 != 0 {
		t.Fatalf("created %v, %v: want at most mode 0600", fi, err)
	}
	if _, err := CreateLocked(tmp, 0o600); !errors.Is(err, ErrDeviceInUse) {
		t.Fatalf("second CreateLocked: %v, want ErrDeviceInUse", err)
	}
	if err := l.Rename(path); err != nil {
		t.Fatal(err)
	}
	if l.Path() != path {
		t.Fatalf("Path %q after Rename, want %q", l.Path(), path)
	}
	if _, err := LockDevice(path); !errors.Is(err, ErrDeviceInUse) {
		t.Fatalf("lock of the renamed file: %v, want ErrDeviceInUse", err)
	}
	l.Close()
	l2, err := LockDevice(path)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	l2.Close()
}

// TestCreateLocked_NoFollow: a symbolic link at the path is never followed.
func TestCreateLocked_NoFollow(t *testing.T) {
	dir := t.TempDir()
	target, link := filepath.Join(dir, "target"), filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if l, err := CreateLocked(link, 0o600); err == nil {
		l.Close()
		t.Fatal("CreateLocked followed a symbolic link")
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the link's target was created: %v", err)
	}
}
