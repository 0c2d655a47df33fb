package server

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/user"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// fileID names a file by device and inode, so that the server removes its
// own socket file at shutdown and not one that replaced it.
type fileID struct{ dev, ino uint64 }

func fileIDOf(fi fs.FileInfo) fileID {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fileID{dev: uint64(st.Dev), ino: st.Ino}
	}
	return fileID{}
}

// listenUnix creates the listening socket at path with mode and group gid
// (-1: the process's), in this order: bind, chmod, chown, listen — so that
// no client can connect before the file has its final permissions (connect
// is refused until listen). An existing socket file is removed only if
// nothing accepts on it (a stale socket of a dead server); any other file
// is left alone and is an error.
func listenUnix(path string, mode os.FileMode, gid int, log *slog.Logger) (*net.UnixListener, fileID, error) {
	if err := CheckSocketName(path); err != nil {
		return nil, fileID{}, err
	}
	if err := removeStale(path, log); err != nil {
		return nil, fileID{}, err
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fileID{}, fmt.Errorf("server: socket: %w", err)
	}
	f := os.NewFile(uintptr(fd), path) // closes fd on every path below
	defer f.Close()
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		return nil, fileID{}, fmt.Errorf("server: bind %s: %w", path, err)
	}
	fail := func(err error) (*net.UnixListener, fileID, error) {
		os.Remove(path)
		return nil, fileID{}, err
	}
	if err := os.Chmod(path, mode.Perm()); err != nil {
		return fail(fmt.Errorf("server: socket mode: %w", err))
	}
	if gid >= 0 {
		if err := os.Lchown(path, -1, gid); err != nil {
			return fail(fmt.Errorf("server: socket group %d: %w", gid, err))
		}
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return fail(err)
	}
	if err := unix.Listen(fd, unix.SOMAXCONN); err != nil {
		return fail(fmt.Errorf("server: listen %s: %w", path, err))
	}
	l, err := net.FileListener(f) // a dup of fd; f's is closed by the defer
	if err != nil {
		return fail(fmt.Errorf("server: listener: %w", err))
	}
	return l.(*net.UnixListener), fileIDOf(fi), nil
}

// removeStale removes an existing socket file at path that nothing accepts
// on. A live socket is ErrSocketInUse; a file that is not a socket is
// ErrNotSocket.
func removeStale(path string, log *slog.Logger) error {
	stale, err := staleSocket(path)
	if err != nil || !stale {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("server: remove stale socket: %w", err)
	}
	log.Info("removed a stale socket", "socket", path)
	return nil
}

// removeSocket removes path if it is still the socket id names.
func removeSocket(path string, id fileID) {
	fi, err := os.Lstat(path)
	if err != nil || fileIDOf(fi) != id {
		return
	}
	os.Remove(path)
}

// LookupGroup returns the gid of a group given by name or number.
func LookupGroup(group string) (uint32, error) {
	if n, err := strconv.ParseUint(group, 10, 32); err == nil {
		return uint32(n), nil
	}
	g, err := user.LookupGroup(group)
	if err != nil {
		return 0, fmt.Errorf("server: group %q: %w", group, err)
	}
	n, err := strconv.ParseUint(g.Gid, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("server: group %q has gid %q", group, g.Gid)
	}
	return uint32(n), nil
}

// LookupUser returns the uid of a user given by name or number.
func LookupUser(name string) (uint32, error) {
	if n, err := strconv.ParseUint(name, 10, 32); err == nil {
		return uint32(n), nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return 0, fmt.Errorf("server: user %q: %w", name, err)
	}
	n, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("server: user %q has uid %q", name, u.Uid)
	}
	return uint32(n), nil
}
