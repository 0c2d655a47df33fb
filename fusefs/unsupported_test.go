package fusefs_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"ustore/fusefs"
)

// TestMount_Unsupported checks the errno of each call the store cannot
// serve yet: the one a Linux filesystem without the feature answers
// (unsupported.go), so that programs take their fallback.
func TestMount_Unsupported(t *testing.T) {
	mnt := mountStore(t, fusefs.Options{})
	f := filepath.Join(mnt, "f")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "e"), []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(f, unix.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	for _, c := range []struct {
		call string
		err  error
		want syscall.Errno
	}{
		{"mknod fifo", unix.Mknod(filepath.Join(mnt, "p"), unix.S_IFIFO|0o644, 0), unix.EPERM},
		{"setxattr trusted.a", unix.Setxattr(f, "trusted.a", []byte("v"), 0), unix.EOPNOTSUPP},
		{"setxattr security.a", unix.Setxattr(f, "security.a", []byte("v"), 0), unix.EOPNOTSUPP},
		{"removexattr trusted.a", unix.Removexattr(f, "trusted.a"), unix.EOPNOTSUPP},
		// The modes ext4 has and the store not: a filesystem without them.
		{"fallocate ZERO_RANGE", unix.Fallocate(fd, unix.FALLOC_FL_ZERO_RANGE, 0, 1), unix.EOPNOTSUPP},
		{"fallocate COLLAPSE_RANGE", unix.Fallocate(fd, unix.FALLOC_FL_COLLAPSE_RANGE, 0, 4096), unix.EOPNOTSUPP},
		{"fallocate INSERT_RANGE", unix.Fallocate(fd, unix.FALLOC_FL_INSERT_RANGE, 0, 4096), unix.EOPNOTSUPP},
		{"renameat2 RENAME_WHITEOUT", unix.Renameat2(unix.AT_FDCWD, f, unix.AT_FDCWD, filepath.Join(mnt, "e"), unix.RENAME_WHITEOUT), unix.EINVAL},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.call, c.err, c.want)
		}
	}
	// mknod of a regular file is a create.
	if err := unix.Mknod(filepath.Join(mnt, "r"), unix.S_IFREG|0o600, 0); err != nil {
		t.Errorf("mknod S_IFREG: %v", err)
	}
	if st, err := os.Stat(filepath.Join(mnt, "r")); err != nil || st.Mode() != 0o600 {
		t.Errorf("mknod S_IFREG made %v, %v", st, err)
	}
}
