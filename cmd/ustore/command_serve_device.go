package main

// The data file of `ustore serve`: checking the socket path and an existing
// file's mode before anything is written, creating it (0600), deciding
// whether it may be formatted (only when missing or blank — never a
// filesystem, never someone else's data), and telling the service manager
// when serve is ready.

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"ustore/dev"
	"ustore/dev/devopen"
	"ustore/server"
	"ustore/store"
)

// prepareDevice makes the data file ready to open, locked, in an order
// that leaves nothing behind on a refusal: first the socket path must be
// usable (a bad --socket must not leave a fresh image, or a formatted blank
// file, behind), then an existing data file must not be open to others
// (checkDataFileMode), and only then is a missing one created and
// formatted (createFormatted). The device's lock is taken once, here, and
// held by the caller until the store is closed: on an existing device
// after the checks, on a created one before it is formatted.
func prepareDevice(cfg serveConfig, log *slog.Logger) (lock *devopen.Lock, created bool, err error) {
	if err := checkSocket(cfg); err != nil {
		return nil, false, err
	}
	if _, err := os.Lstat(cfg.Device); !errors.Is(err, os.ErrNotExist) {
		if err != nil {
			return nil, false, err
		}
		fi, err := os.Stat(cfg.Device)
		if err != nil {
			return nil, false, err
		}
		if err := checkDataFileMode(cfg.Device, fi, cfg.AllowReadableDevice, log); err != nil {
			return nil, false, err
		}
		lock, err := devopen.LockDevice(cfg.Device)
		return lock, false, err
	}
	if cfg.ReadOnly {
		// Never created or formatted: there is nothing to serve.
		return nil, false, fmt.Errorf("--read-only serves an existing filesystem: %s does not exist", cfg.Device)
	}
	lock, err = createFormatted(cfg, log)
	return lock, err == nil, err
}

// checkSocket is server.CheckSocketPath, except that a socket in the data
// file's own directory may wait for it: serve creates that directory with
// the data file, and until then only the path's length can be checked.
func checkSocket(cfg serveConfig) error {
	check := server.CheckSocketPath
	dir := filepath.Dir(cfg.Socket)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) && dir == filepath.Dir(cfg.Device) {
		check = server.CheckSocketName
	}
	if err := check(cfg.Socket); err != nil {
		return fmt.Errorf("--socket: %w", err)
	}
	return nil
}

// createFormatted creates a missing data file of cfg.Size bytes (allocated),
// mode dataFileMode, and formats it — under a temporary name, renamed into
// place once formatted, so that the data file never exists half formatted
// (a crash during the first start leaves only the temporary file, redone
// next time). The file is locked from its creation on, and the lock it
// returns, held on the renamed file, is the data file's.
func createFormatted(cfg serveConfig, log *slog.Logger) (lock *devopen.Lock, err error) {
	if err := os.MkdirAll(filepath.Dir(cfg.Device), dataDirMode); err != nil {
		return nil, err
	}
	tmp := cfg.Device + ".mkfs"
	lock, err = devopen.CreateLocked(tmp, dataFileMode)
	if errors.Is(err, devopen.ErrDeviceInUse) {
		return nil, fmt.Errorf("%w: %s is being formatted by another ustore serve", devopen.ErrDeviceInUse, tmp)
	}
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			lock.Close()
		}
	}()
	// The mode exactly, whatever the umask, and also on a temporary file
	// an older serve left behind with its own.
	f := lock.File()
	if err := f.Chmod(dataFileMode); err != nil {
		return nil, err
	}
	if err := f.Truncate(0); err != nil {
		return nil, err
	}
	start := time.Now()
	d, _, err := devopen.Open(tmp, devopen.Options{Size: cfg.Size, Backend: cfg.Backend, Logger: log})
	if err != nil {
		return nil, err
	}
	err = store.Mkfs(d, store.MkfsOptions{})
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("format %s: %w", cfg.Device, err)
	}
	if err := lock.Rename(cfg.Device); err != nil {
		return nil, err
	}
	if dir, err := os.Open(filepath.Dir(cfg.Device)); err == nil {
		dir.Sync()
		dir.Close()
	}
	log.Info("created and formatted the data file", "device", cfg.Device, "bytes", cfg.Size, "duration", time.Since(start))
	return lock, nil
}

// openDevice opens the (locked) device, formatting it first when it is a
// regular file of nothing but zeros.
func openDevice(cfg serveConfig, log *slog.Logger) (dev.Device, devopen.Choice, bool, error) {
	fi, err := os.Stat(cfg.Device)
	if err != nil {
		return nil, devopen.Choice{}, false, err
	}
	blank := false
	if fi.Mode().IsRegular() {
		if blank, err = isBlank(cfg.Device); err != nil {
			return nil, devopen.Choice{}, false, err
		}
	}
	opts := devopen.Options{Backend: cfg.Backend, Logger: log}
	if blank {
		opts.Size = cfg.Size
	}
	d, choice, err := devopen.Open(cfg.Device, opts)
	if err != nil {
		return nil, devopen.Choice{}, false, fmt.Errorf("open %s: %w", cfg.Device, err)
	}
	if blank {
		if err := store.Mkfs(d, store.MkfsOptions{}); err != nil {
			d.Close()
			return nil, devopen.Choice{}, false, fmt.Errorf("format %s: %w", cfg.Device, err)
		}
		log.Info("formatted a blank data file", "device", cfg.Device, "bytes", d.Size())
	}
	return d, choice, blank, nil
}

// isBlank reports whether the regular file at path holds nothing but
// zeros: holes (skipped with SEEK_DATA), zero bytes, or nothing at all. It
// reads until the first non-zero byte, which in a formatted file is its
// first superblock.
func isBlank(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	size := fi.Size()
	fd := int(f.Fd())
	buf := make([]byte, 1<<20)
	for off := int64(0); off < size; {
		data, err := unix.Seek(fd, off, unix.SEEK_DATA)
		switch {
		case errors.Is(err, unix.ENXIO):
			return true, nil // only a hole from off on
		case err != nil:
			data = off // no SEEK_DATA here: read everything
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			hole = size
		}
		for p := data; p < hole; {
			n, err := f.ReadAt(buf[:min(int64(len(buf)), hole-p)], p)
			for _, b := range buf[:n] {
				if b != 0 {
					return false, nil
				}
			}
			p += int64(n)
			if err == io.EOF {
				return true, nil
			}
			if err != nil {
				return false, err
			}
		}
		off = hole
	}
	return true, nil
}

// sdNotify sends state to the service manager's $NOTIFY_SOCKET (a
// unixgram socket; '@' starts an abstract name), if there is one.
func sdNotify(state string) error {
	addr := os.Getenv("NOTIFY_SOCKET")
	if addr == "" {
		return nil
	}
	if addr[0] == '@' {
		addr = "\x00" + addr[1:]
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte(state))
	return err
}
