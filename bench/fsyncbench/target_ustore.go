package fsyncbench

import (
	"context"
	"fmt"
	"time"

	"ustore/client"
)

// dialTimeout bounds a connection's dial and handshake.
const dialTimeout = 10 * time.Second

// Ustore is a running ustore server, driven through client.Client: each
// Conn is a connection of its own.
type Ustore struct {
	socket string
	opts   UstoreOptions
}

// UstoreOptions configure a Ustore target. Zero values mean the defaults.
type UstoreOptions struct {
	// Root is the directory in the store the workloads work under (it
	// must exist); "" is the store's root.
	Root string
	// Metrics is the server's Prometheus endpoint (`ustore serve
	// --metrics-addr`: "127.0.0.1:9464", or a URL), scraped for the
	// server's counters before and after each measurement; "" for none.
	Metrics string
	// Counters, when set, replaces the scrape: a test's in-process server
	// hands its store's Stats this way.
	Counters func() (Counters, error)
	// WriteBehind is how many writes each file keeps in flight
	// (client.WriteBehind): a write returns once it is sent, and the
	// file's fsync, read and close wait for the replies first. 0: every
	// write waits for its reply, one round trip of the socket each.
	WriteBehind int
}

// NewUstore returns the target of the server listening on socket.
func NewUstore(socket string, opts UstoreOptions) *Ustore {
	return &Ustore{socket: socket, opts: opts}
}

func (u *Ustore) Name() string { return "ustore " + u.socket }

func (u *Ustore) Connect(ctx context.Context) (Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	c, err := client.Dial(dctx, u.socket)
	if err != nil {
		return nil, err
	}
	dirs, err := NewDirs(ctx, c, u.opts.Root)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("fsyncbench: %w", err)
	}
	return &ustoreConn{ctx: ctx, c: c, dirs: dirs, writeBehind: u.opts.WriteBehind}, nil
}

func (u *Ustore) Counters(ctx context.Context) (Counters, error) {
	switch {
	case u.opts.Counters != nil:
		return u.opts.Counters()
	case u.opts.Metrics != "":
		return Scrape(ctx, u.opts.Metrics)
	}
	return nil, nil
}

// ustoreConn is one connection; its names resolve through Dirs, which
// keeps the directories it has looked up (a workload's files sit in one
// or two directories, so a create is one request).
type ustoreConn struct {
	ctx         context.Context
	c           *client.Client
	dirs        *Dirs
	writeBehind int // UstoreOptions.WriteBehind
}

func (u *ustoreConn) Mkdir(name string) error {
	pi, base, err := u.dirs.Parent(name)
	if err != nil {
		return err
	}
	a, err := u.c.Mkdir(u.ctx, pi, base, 0o755)
	if err != nil {
		return err
	}
	u.dirs.Made(name, a.Ino)
	return nil
}

func (u *ustoreConn) Create(name string) (File, error) {
	pi, base, err := u.dirs.Parent(name)
	if err != nil {
		return nil, err
	}
	a, err := u.c.Create(u.ctx, pi, base, 0o644)
	if err != nil {
		return nil, err
	}
	return u.file(a.Ino), nil
}

func (u *ustoreConn) Open(name string) (File, error) {
	pi, base, err := u.dirs.Parent(name)
	if err != nil {
		return nil, err
	}
	a, err := u.c.Lookup(u.ctx, pi, base)
	if err != nil {
		return nil, err
	}
	return u.file(a.Ino), nil
}

func (u *ustoreConn) Unlink(name string) error {
	pi, base, err := u.dirs.Parent(name)
	if err != nil {
		return err
	}
	return u.c.Unlink(u.ctx, pi, base)
}

func (u *ustoreConn) Rmdir(name string) error {
	pi, base, err := u.dirs.Parent(name)
	if err != nil {
		return err
	}
	u.dirs.Removed(name)
	return u.c.Rmdir(u.ctx, pi, base)
}

func (u *ustoreConn) FsyncDir(name string) error {
	ino, err := u.dirs.Dir(name)
	if err != nil {
		return err
	}
	return u.c.Fsync(u.ctx, ino, false)
}

func (u *ustoreConn) Sync() error { return u.c.Sync(u.ctx) }

func (u *ustoreConn) Close() error { return u.c.Close() }

// file is the File of inode ino.
func (u *ustoreConn) file(ino uint64) File {
	f := &ustoreFile{ctx: u.ctx, c: u.c, ino: ino}
	if u.writeBehind > 0 {
		f.wb = u.c.WriteBehind(ino, u.writeBehind)
	}
	return f
}

// ustoreFile is an inode: the protocol has no open files.
type ustoreFile struct {
	ctx context.Context
	c   *client.Client
	ino uint64
	wb  *client.WriteBehind // nil: each write waits for its reply
}

func (f *ustoreFile) WriteAt(p []byte, off int64) error {
	if f.wb != nil {
		return f.wb.WriteAt(f.ctx, p, uint64(off))
	}
	n, err := f.c.Write(f.ctx, f.ino, uint64(off), p)
	if err == nil && n != len(p) {
		err = fmt.Errorf("short write: %d of %d bytes at %d", n, len(p), off)
	}
	return err
}

func (f *ustoreFile) ReadAt(p []byte, off int64) error {
	var n int
	var err error
	if f.wb != nil {
		n, err = f.wb.ReadAt(f.ctx, p, uint64(off))
	} else {
		n, err = f.c.Read(f.ctx, f.ino, uint64(off), p)
	}
	if err == nil && n != len(p) {
		err = fmt.Errorf("short read: %d of %d bytes at %d", n, len(p), off)
	}
	return err
}

func (f *ustoreFile) Fsync() error {
	if f.wb != nil {
		return f.wb.Fsync(f.ctx, false)
	}
	return f.c.Fsync(f.ctx, f.ino, false)
}

func (f *ustoreFile) Close() error {
	if f.wb != nil {
		return f.wb.Close(f.ctx)
	}
	return nil
}
