package server

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// CheckSocketPath reports whether a server could listen at path now: short
// enough for sun_path, in an existing directory this process may create
// files in, and free — nothing there, or a stale socket of a dead server
// (which listening replaces). A live socket is ErrSocketInUse, any other
// file ErrNotSocket. It changes nothing: `ustore serve` calls it before it
// creates or formats a data file, so that a bad --socket leaves nothing
// behind.
func CheckSocketPath(path string) error {
	if err := CheckSocketName(path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("server: socket directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("server: socket directory %s is not a directory", dir)
	}
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return fmt.Errorf("server: socket directory %s: cannot create the socket there: %w", dir, err)
	}
	_, err = staleSocket(path)
	return err
}

// CheckSocketName reports whether path fits a Unix socket address
// (sun_path): all that can be checked of a socket whose directory does not
// exist yet.
func CheckSocketName(path string) error {
	if len(path) > socketPathMax {
		return fmt.Errorf("server: socket path %s is %d bytes, more than a Unix socket's %d", path, len(path), socketPathMax)
	}
	return nil
}

// staleSocket reports whether path is a socket file nothing accepts on (a
// stale socket of a dead server): false with no error when nothing is
// there, ErrSocketInUse when a server answers, ErrNotSocket when the file
// is not a socket.
func staleSocket(path string) (bool, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("server: socket path: %w", err)
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return false, fmt.Errorf("%w: %s is a %v; remove it or choose another --socket", ErrNotSocket, path, fi.Mode().Type())
	}
	c, err := net.DialTimeout("unix", path, staleDialTimeout)
	if err == nil {
		c.Close()
		return false, fmt.Errorf("%w: %s", ErrSocketInUse, path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return false, fmt.Errorf("server: %s exists and its server cannot be reached to tell whether it is alive: %w", path, err)
	}
	return true, nil
}
