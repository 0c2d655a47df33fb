package fusefs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestCheckMountPoint_Errors: each reason a directory cannot be mounted
// on is its sentinel, checked before anything is dialled or mounted.
func TestCheckMountPoint_Errors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fuseDevice); err == nil {
		if _, err := CheckMountPoint(file); !errors.Is(err, ErrNotDir) {
			t.Errorf("a file: %v, want ErrNotDir", err)
		}
		if _, err := CheckMountPoint("/proc"); !errors.Is(err, ErrBusy) {
			t.Errorf("/proc, a mount point: %v, want ErrBusy", err)
		}
		if _, err := CheckMountPoint(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a missing directory: %v, want ENOENT", err)
		}
		if got, err := CheckMountPoint(dir); err != nil || got != dir {
			t.Errorf("a directory: %q %v", got, err)
		}
	}
	saved := fuseDevice
	defer func() { fuseDevice = saved }()
	fuseDevice = filepath.Join(dir, "no-fuse")
	if _, err := CheckMountPoint(dir); !errors.Is(err, ErrNoDevice) {
		t.Errorf("no FUSE device: %v, want ErrNoDevice", err)
	}
}

// TestUnescapeMountinfo_Escapes: mountinfo's octal escapes of a mount point.
func TestUnescapeMountinfo_Escapes(t *testing.T) {
	for in, want := range map[string]string{
		`/mnt/u`:               "/mnt/u",
		`/mnt/a\040b`:          "/mnt/a b",
		`/mnt/t\011ab\134x\01`: "/mnt/t\tab\\x\\01",
	} {
		if got := unescapeMountinfo(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
