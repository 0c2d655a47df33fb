package fsyncbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Dir is a directory on a kernel filesystem (ext4, xfs, btrfs on a loop
// device, say) driven through the system calls: open, pwrite, pread,
// fsync, unlink, and syncfs for Sync.
type Dir struct {
	root string
}

// NewDir returns the target rooted at directory root, which must exist.
func NewDir(root string) (*Dir, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("fsyncbench: %s is not a directory", root)
	}
	return &Dir{root: root}, nil
}

func (d *Dir) Name() string { return "dir " + d.root }

// Connect returns the directory: system calls need no connection.
func (d *Dir) Connect(context.Context) (Conn, error) { return dirConn{d.root}, nil }

// Counters: a kernel filesystem has none to offer here.
func (d *Dir) Counters(context.Context) (Counters, error) { return nil, nil }

type dirConn struct{ root string }

func (c dirConn) path(name string) string { return filepath.Join(c.root, filepath.FromSlash(name)) }

func (c dirConn) Mkdir(name string) error { return os.Mkdir(c.path(name), 0o755) }

func (c dirConn) Create(name string) (File, error) {
	f, err := os.OpenFile(c.path(name), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (c dirConn) Open(name string) (File, error) {
	f, err := os.OpenFile(c.path(name), os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (c dirConn) Unlink(name string) error { return unix.Unlink(c.path(name)) }

func (c dirConn) Rmdir(name string) error { return unix.Rmdir(c.path(name)) }

func (c dirConn) FsyncDir(name string) error {
	f, err := os.Open(c.path(name))
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

// Sync is syncfs(2) of the directory's filesystem: this filesystem only,
// where sync(2) would also flush every other one.
func (c dirConn) Sync() error {
	f, err := os.Open(c.root)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}

func (dirConn) Close() error { return nil }

type osFile struct{ f *os.File }

func (o osFile) WriteAt(p []byte, off int64) error {
	_, err := o.f.WriteAt(p, off)
	return err
}

func (o osFile) ReadAt(p []byte, off int64) error {
	_, err := o.f.ReadAt(p, off)
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("read %d bytes at %d: past the end of %s", len(p), off, o.f.Name())
	}
	return err
}

func (o osFile) Fsync() error { return o.f.Sync() }

func (o osFile) Close() error { return o.f.Close() }
