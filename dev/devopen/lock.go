package devopen

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// ErrDeviceInUse: another process holds the device's lock (another ustore
// serve, mkfs or fsck on the same device). Its text is the one serve has
// always printed, from when the lock was the server's.
var ErrDeviceInUse = errors.New("server: the device is in use by another server")

// Lock is an exclusive lock on a backing device, so that one process at a
// time (serve, mkfs, fsck) uses it: two engines writing one device would
// destroy it. It is an flock(2) on the device file itself (a regular file
// or a block device), taken before the store is opened and held until
// after it is closed. flock locks belong to the open file description, so
// the device's own descriptors (opened by Open) neither take nor release
// it, the lock follows the file through a rename (Rename), and the kernel
// drops it if the process dies.
type Lock struct {
	f    *os.File
	path string
}

// LockDevice takes the lock of the device at path without waiting. A lock
// held elsewhere is ErrDeviceInUse, naming the path.
func LockDevice(path string) (*Lock, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("server: lock device: %w", err)
	}
	return lock(f, path)
}

// CreateLocked opens the regular file at path for writing, creating it
// with perm if it is missing (never through a symbolic link), and takes
// its lock without waiting, as LockDevice does. File gives the file, to
// size it; Rename moves it into place with the lock held.
func CreateLocked(path string, perm os.FileMode) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, perm)
	if err != nil {
		return nil, err
	}
	return lock(f, path)
}

// lock takes f's lock without waiting, or closes f.
func lock(f *os.File, path string) (*Lock, error) {
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is locked (is another ustore serve running on it?)", ErrDeviceInUse, path)
		}
		return nil, fmt.Errorf("server: lock device %s: %w", path, err)
	}
	return &Lock{f: f, path: path}, nil
}

// Path is the locked device's path.
func (l *Lock) Path() string { return l.path }

// File is the locked file's descriptor (the lock's own open file
// description). Closing it releases the lock: use Close.
func (l *Lock) File() *os.File { return l.f }

// Rename renames the locked file to path. The lock goes with it: it is
// held on the file, not the name, so no other process can take path's
// lock between the rename and the use of the file.
func (l *Lock) Rename(path string) error {
	if err := os.Rename(l.path, path); err != nil {
		return err
	}
	l.path = path
	return nil
}

// Close releases the lock.
func (l *Lock) Close() error {
	return l.f.Close()
}
