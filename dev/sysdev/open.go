package sysdev

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"golang.org/x/sys/unix"

	"ustore/dev"
)

// Open opens the regular file or block device at path as a Device, creating
// or extending a regular file to opts.Size (see Options). The caller must
// Close it.
func Open(path string, opts Options) (*Device, error) {
	opts, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	fd, size, direct, err := openBacking(path, opts)
	if err != nil {
		return nil, err
	}
	return newDevice(path, fd, size, direct, opts), nil
}

// OpenBacking opens the backing file or block device at path as every
// backend needs it — created or extended to opts.Size and made durable (size
// and name), checked to be a regular file or a block device, with O_DIRECT
// when opts.Direct and the filesystem really accepts it (else buffered, with
// one log line) — and returns the fd, the size in whole sectors and whether
// O_DIRECT is on. dev/uringdev opens its file here too, so both backends
// treat the backing store the same. The caller closes fd.
func OpenBacking(path string, opts Options) (fd int, size int64, direct bool, err error) {
	if opts, err = opts.resolve(); err != nil {
		return -1, 0, false, err
	}
	return openBacking(path, opts)
}

func openBacking(path string, opts Options) (fd int, size int64, direct bool, err error) {
	fd, direct, err = openFD(path, opts)
	if err != nil {
		return -1, 0, false, err
	}
	size, err = prepareSize(fd, path, opts.Size)
	if err != nil {
		unix.Close(fd)
		return -1, 0, false, err
	}
	if direct {
		// Some filesystems take O_DIRECT at open and refuse the I/O
		// itself; one aligned read finds out before the device is used.
		probe := dev.AlignedBuffer(dev.SectorSize)
		err := transfer("read", opts.sys.pread, fd, probe, 0)
		switch {
		case errors.Is(err, unix.EINVAL):
			unix.Close(fd)
			logFallback(opts.Logger, path, "first read", err)
			if fd, err = openRetry(opts.sys, path, flagsOf(opts)&^unix.O_CREAT, 0); err != nil {
				return -1, 0, false, fmt.Errorf("sysdev: open %s: %w", path, err)
			}
			direct = false
		case err != nil:
			unix.Close(fd)
			return -1, 0, false, fmt.Errorf("sysdev: open %s: probe read: %w", path, err)
		}
	}
	return fd, size, direct, nil
}

// baseFlags are the open flags of every device; readOnlyFlags of one
// opened with Options.ReadOnly.
const (
	baseFlags     = unix.O_RDWR | unix.O_CLOEXEC
	readOnlyFlags = unix.O_RDONLY | unix.O_CLOEXEC
)

// flagsOf are the open flags opts ask for, O_DIRECT aside.
func flagsOf(opts Options) int {
	switch {
	case opts.ReadOnly:
		return readOnlyFlags
	case opts.Size > 0:
		return baseFlags | unix.O_CREAT
	}
	return baseFlags
}

// openFD opens path, with O_DIRECT when asked and accepted, and reports
// whether O_DIRECT is on.
func openFD(path string, opts Options) (fd int, direct bool, err error) {
	flags := flagsOf(opts)
	if opts.Direct {
		fd, err := openRetry(opts.sys, path, flags|unix.O_DIRECT, 0o600)
		if err == nil {
			return fd, true, nil
		}
		if err != unix.EINVAL {
			return -1, false, fmt.Errorf("sysdev: open %s: %w", path, err)
		}
		logFallback(opts.Logger, path, "open", err)
	}
	fd, err = openRetry(opts.sys, path, flags, 0o600)
	if err != nil {
		return -1, false, fmt.Errorf("sysdev: open %s: %w", path, err)
	}
	return fd, false, nil
}

// openRetry is open(2), retried on EINTR (a signal during a slow open).
func openRetry(sys *syscalls, path string, flags int, mode uint32) (int, error) {
	for {
		fd, err := sys.open(path, flags, mode)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// logFallback writes the one line that says O_DIRECT is off and why.
func logFallback(log *slog.Logger, path, at string, err error) {
	log.Warn("sysdev: O_DIRECT refused, falling back to buffered I/O through the page cache (Flush still calls fdatasync)",
		"path", path, "at", at, "err", err)
}

// prepareSize sizes the device behind fd: it extends a regular file smaller
// than want (extend), checks a block device against want, and returns the
// size rounded down to a whole sector.
func prepareSize(fd int, path string, want int64) (int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, fmt.Errorf("sysdev: stat %s: %w", path, err)
	}
	var have int64
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		have = st.Size
		if have < want {
			if err := extend(fd, have, want); err != nil {
				return 0, fmt.Errorf("sysdev: extend %s to %d bytes: %w", path, want, err)
			}
			if err := syncCreation(fd, path); err != nil {
				return 0, err
			}
			have = want
		}
	case unix.S_IFBLK:
		n, err := unix.IoctlGetUint64(fd, unix.BLKGETSIZE64)
		if err != nil {
			return 0, fmt.Errorf("sysdev: BLKGETSIZE64 %s: %w", path, err)
		}
		have = int64(n)
		if have < want {
			return 0, fmt.Errorf("%w: block device %s has %d bytes, want at least %d", ErrSize, path, have, want)
		}
	default:
		return 0, fmt.Errorf("%w: %s (mode %#o)", ErrFileType, path, st.Mode&unix.S_IFMT)
	}
	size := have &^ (dev.SectorSize - 1)
	if size == 0 {
		return 0, fmt.Errorf("%w: %s has %d bytes, less than one sector", ErrSize, path, have)
	}
	return size, nil
}

// extend grows a regular file from have to want bytes with its space
// allocated (fallocate, mode 0: unwritten extents, read as zeros), not as a
// hole, for two reasons. The space is the device's from the start: a full
// host filesystem refuses it now, with ENOSPC, rather than failing some
// later data write under an fsync. And the host filesystem can take an
// O_DIRECT write into allocated blocks under its inode's shared lock, where
// a write into a hole allocates and needs the exclusive one: ext4 refuses
// such a write to io_uring's non-blocking issue, which punts it to an io-wq
// worker that queues on the lock (docs/BENCHMARKS.md, "eBPF overhead: the
// benchmark's device is a fully written image"). A filesystem without
// fallocate (EOPNOTSUPP) gets a sparse file, as before.
func extend(fd int, have, want int64) error {
	// A size the filesystem cannot hold is refused before fallocate, which
	// would fill the filesystem up to the last free block before it failed.
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err == nil && fs.Bsize > 0 && uint64(want-have)/uint64(fs.Bsize) > fs.Bavail {
		return fmt.Errorf("%w: %d bytes more wanted, %d free on its filesystem", unix.ENOSPC, want-have, fs.Bavail*uint64(fs.Bsize))
	}
	err := unix.Fallocate(fd, 0, have, want-have)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return unix.Ftruncate(fd, want)
	}
	return err
}

// syncCreation makes a new or extended backing file's size, and its name,
// durable. Flush is fdatasync of the file alone: without this, a power cut
// after the first flushed commit could still lose the file's directory entry
// or its length, and with them everything flushed into it.
func syncCreation(fd int, path string) error {
	if err := unix.Fsync(fd); err != nil {
		return fmt.Errorf("sysdev: fsync %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("sysdev: open directory %s: %w", dir, err)
	}
	defer unix.Close(dfd)
	if err := unix.Fsync(dfd); err != nil {
		return fmt.Errorf("sysdev: fsync directory %s: %w", dir, err)
	}
	return nil
}
