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
		{"symlink", unix.Symlink("f", filepath.Join(mnt, "s")), unix.EPERM},
		{"mknod fifo", unix.Mknod(filepath.Join(mnt, "p"), unix.S_IFIFO|0o644, 0), unix.EPERM},
		{"setxattr trusted.a", unix.Setxattr(f, "trusted.a", []byte("v"), 0), unix.EOPNOTSUPP},
		{"setxattr security.a", unix.Setxattr(f, "security.a", []byte("v"), 0), unix.EOPNOTSUPP},
		{"removexattr trusted.a", unix.Removexattr(f, "trusted.a"), unix.EOPNOTSUPP},
		{"fallocate", unix.Fallocate(fd, 0, 0, 1<<20), unix.EOPNOTSUPP},
		{"fallocate punch hole", unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, 1), unix.EOPNOTSUPP},
		{"renameat2 RENAME_NOREPLACE", unix.Renameat2(unix.AT_FDCWD, f, unix.AT_FDCWD, filepath.Join(mnt, "g"), unix.RENAME_NOREPLACE), unix.EINVAL},
		{"renameat2 RENAME_EXCHANGE", unix.Renameat2(unix.AT_FDCWD, f, unix.AT_FDCWD, filepath.Join(mnt, "e"), unix.RENAME_EXCHANGE), unix.EINVAL},
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
