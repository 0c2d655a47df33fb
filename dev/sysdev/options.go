package sysdev

import (
	"fmt"
	"log/slog"

	"golang.org/x/sys/unix"

	"ustore/dev"
)

// Options says how Open opens the device.
type Options struct {
	// Size is the least size the device must have, in bytes: a multiple
	// of dev.SectorSize, or 0 for "whatever it is". A missing regular file
	// is created and a smaller one extended to Size, its space allocated
	// (fallocate; sparse where the filesystem has no fallocate); a block
	// device smaller than Size is an error. The device's size is then the
	// file's or the block device's, rounded down to a whole sector.
	Size int64
	// Direct asks for O_DIRECT, falling back to buffered I/O (logged) where
	// the filesystem refuses it.
	Direct bool
	// ReadOnly opens the device O_RDONLY: it is never created, extended or
	// written (a write fails with EBADF), for a damaged device served
	// read-only, or one on read-only media. Size must be 0.
	ReadOnly bool
	// Workers is the number of worker goroutines, and so the most syscalls
	// in flight at once; 0 means 32.
	Workers int
	// Logger receives the one line that reports an O_DIRECT fallback; nil
	// means slog.Default().
	Logger *slog.Logger

	// sys replaces the syscalls, for tests that inject failures; nil means
	// the real ones.
	sys *syscalls
}

// syscalls are the system calls the device makes on its fd.
type syscalls struct {
	open      func(path string, flags int, mode uint32) (int, error)
	pread     func(fd int, p []byte, off int64) (int, error)
	pwrite    func(fd int, p []byte, off int64) (int, error)
	pwritev   func(fd int, iovs [][]byte, off int64) (int, error)
	fdatasync func(fd int) error
}

var realSyscalls = syscalls{open: unix.Open, pread: unix.Pread, pwrite: unix.Pwrite, pwritev: unix.Pwritev, fdatasync: unix.Fdatasync}

// resolve checks o and fills in its defaults.
func (o Options) resolve() (Options, error) {
	if o.Size < 0 || o.Size%dev.SectorSize != 0 {
		return o, fmt.Errorf("%w: Options.Size %d is not a non-negative multiple of %d", ErrSize, o.Size, dev.SectorSize)
	}
	if o.ReadOnly && o.Size != 0 {
		return o, fmt.Errorf("%w: Options.Size %d with ReadOnly: a read-only device is never extended", ErrSize, o.Size)
	}
	switch {
	case o.Workers == 0:
		o.Workers = workersDefault
	case o.Workers < 0 || o.Workers > workersMax:
		return o, fmt.Errorf("%w: %d, want 1..%d (0 for %d)", ErrWorkers, o.Workers, workersMax, workersDefault)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.sys == nil {
		o.sys = &realSyscalls
	}
	return o, nil
}
