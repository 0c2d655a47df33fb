package server

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// DeviceLock is an exclusive lock on a backing device, so that one server
// at a time mounts it: two engines writing one device would destroy it. It
// is an flock(2) on the device file itself (a regular file or a block
// device), taken before the store is opened and held until after it is
// closed. flock locks belong to the open file description, so the device's
// own descriptors (opened by dev/devopen) neither take nor release it, and
// the kernel drops it if the process dies.
type DeviceLock struct {
	f    *os.File
	path string
}

// LockDevice takes the lock of the device at path without waiting. A lock
// held elsewhere is ErrDeviceInUse, naming the path.
func LockDevice(path string) (*DeviceLock, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("server: lock device: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is locked (is another ustore serve running on it?)", ErrDeviceInUse, path)
		}
		return nil, fmt.Errorf("server: lock device %s: %w", path, err)
	}
	return &DeviceLock{f: f, path: path}, nil
}

// Path is the locked device's path.
func (l *DeviceLock) Path() string { return l.path }

// Close releases the lock.
func (l *DeviceLock) Close() error {
	return l.f.Close()
}
