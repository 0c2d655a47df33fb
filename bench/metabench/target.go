package metabench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"ustore/bench/fsyncbench"
	"ustore/client"
	"ustore/proto"
)

// Target is a filesystem the workload runs on: a ustore server (Ustore)
// or a kernel filesystem's directory (Dir). Names are '/'-separated paths
// relative to the target's root.
type Target interface {
	// Name says what the target is, for reports.
	Name() string
	// Connect opens what one client works through: a connection of its
	// own on a server; the directory itself on a kernel filesystem.
	Connect(ctx context.Context) (Conn, error)
}

// Conn is one client's way into the target, used by one goroutine at a
// time.
type Conn interface {
	// Create makes a new empty regular file (EEXIST if name exists), as
	// open(O_CREAT|O_EXCL) and close.
	Create(name string) error
	// Stat looks name up and returns nothing but the error (stat(2)).
	Stat(name string) error
	// Rename renames from to to (rename(2)).
	Rename(from, to string) error
	Unlink(name string) error
	Mkdir(name string) error
	Rmdir(name string) error
	// ReadDir reads the whole of directory name and returns how many
	// entries it holds, "." and ".." not counted.
	ReadDir(name string) (int, error)
	Close() error
}

// dialTimeout bounds a connection's dial and handshake.
const dialTimeout = 10 * time.Second

// Ustore is a running ustore server, driven through client.Client.
type Ustore struct {
	socket, root string
}

// NewUstore returns the target of the server on socket, working under
// directory root of the store ("" or "/": its root; it must exist).
func NewUstore(socket, root string) *Ustore { return &Ustore{socket: socket, root: root} }

func (u *Ustore) Name() string { return "ustore " + u.socket }

func (u *Ustore) Connect(ctx context.Context) (Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	c, err := client.Dial(dctx, u.socket)
	if err != nil {
		return nil, err
	}
	dirs, err := fsyncbench.NewDirs(ctx, c, u.root)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("metabench: %w", err)
	}
	return &ustoreConn{ctx: ctx, c: c, dirs: dirs}, nil
}

// ustoreConn is one connection; its names resolve through fsyncbench.Dirs,
// which keeps the directories it has looked up, so each op is one request,
// as a system call on a path whose directories the kernel has cached.
type ustoreConn struct {
	ctx  context.Context
	c    *client.Client
	dirs *fsyncbench.Dirs
}

func (u *ustoreConn) Create(name string) error {
	pi, base, err := u.dirs.Parent(name)
	if err != nil {
		return err
	}
	_, err = u.c.Create(u.ctx, pi, base, 0o644)
	return err
}

func (u *ustoreConn) Stat(name string) error {
	pi, base, err := u.dirs.Parent(name)
	if err != nil {
		return err
	}
	_, err = u.c.Lookup(u.ctx, pi, base)
	return err
}

func (u *ustoreConn) Rename(from, to string) error {
	fi, fb, err := u.dirs.Parent(from)
	if err != nil {
		return err
	}
	ti, tb, err := u.dirs.Parent(to)
	if err != nil {
		return err
	}
	return u.c.Rename(u.ctx, fi, fb, ti, tb)
}

func (u *ustoreConn) Unlink(name string) error {
	pi, base, err := u.dirs.Parent(name)
	if err != nil {
		return err
	}
	return u.c.Unlink(u.ctx, pi, base)
}

func (u *ustoreConn) Mkdir(name string) error {
	pi, base, err := u.dirs.Parent(name)
	if err != nil {
		return err
	}
	_, err = u.c.Mkdir(u.ctx, pi, base, 0o755)
	return err
}

func (u *ustoreConn) Rmdir(name string) error {
	pi, base, err := u.dirs.Parent(name)
	if err != nil {
		return err
	}
	u.dirs.Removed(name)
	return u.c.Rmdir(u.ctx, pi, base)
}

func (u *ustoreConn) ReadDir(name string) (int, error) {
	ino, err := u.dirs.Dir(name)
	if err != nil {
		return 0, err
	}
	n := 0
	for cookie := uint64(0); ; {
		es, err := u.c.ReadDir(u.ctx, ino, cookie, proto.ReadDirEntriesMax)
		if err != nil {
			return n, err
		}
		for _, e := range es {
			if e.Name != "." && e.Name != ".." {
				n++
			}
		}
		if len(es) < proto.ReadDirEntriesMax {
			return n, nil
		}
		cookie = es[len(es)-1].Cookie
	}
}

func (u *ustoreConn) Close() error { return u.c.Close() }

// Dir is a directory on a kernel filesystem, driven through the system
// calls on absolute paths.
type Dir struct{ root string }

// NewDir returns the target rooted at directory root, which must exist.
func NewDir(root string) (*Dir, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("metabench: %s is not a directory", root)
	}
	return &Dir{root: abs}, nil
}

func (d *Dir) Name() string { return "dir " + d.root }

// Connect returns the directory: system calls need no connection.
func (d *Dir) Connect(context.Context) (Conn, error) { return dirConn{d.root}, nil }

type dirConn struct{ root string }

func (c dirConn) path(name string) string { return filepath.Join(c.root, filepath.FromSlash(name)) }

func (c dirConn) Create(name string) error {
	fd, err := unix.Open(c.path(name), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return &os.PathError{Op: "create", Path: c.path(name), Err: err}
	}
	return unix.Close(fd)
}

func (c dirConn) Stat(name string) error {
	var st unix.Stat_t
	return unix.Stat(c.path(name), &st)
}

func (c dirConn) Rename(from, to string) error { return unix.Rename(c.path(from), c.path(to)) }

func (c dirConn) Unlink(name string) error { return unix.Unlink(c.path(name)) }

func (c dirConn) Mkdir(name string) error { return unix.Mkdir(c.path(name), 0o755) }

func (c dirConn) Rmdir(name string) error { return unix.Rmdir(c.path(name)) }

func (c dirConn) ReadDir(name string) (int, error) {
	f, err := os.Open(c.path(name))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	for {
		names, err := f.Readdirnames(proto.ReadDirEntriesMax)
		n += len(names)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

func (dirConn) Close() error { return nil }
