package store

import (
	"context"
	"io"
	"strconv"
	"strings"
	"syscall"
	"time"

	"ustore/engine"
)

// Paths are '/'-separated and absolute within the store; empty components
// ("a//b", a trailing '/') are ignored, "." and ".." are not allowed. The
// store never follows a symbolic link: a path whose last component is one
// resolves to the link itself (as lstat), and a path through one, as a
// directory, fails with ELOOP (as openat2's RESOLVE_NO_SYMLINKS).

// Ino is an inode number. It is engine's type, named here so that the
// server, which sees the store and not the engine, converts the wire's u64
// to it where it decodes a request.
type Ino = engine.Ino

// RootIno is the root directory's inode number.
const RootIno = engine.RootDirIno

// Resolve returns the attributes of the inode at path.
func (s *Store) Resolve(path string) (Attr, error) {
	a, err := s.resolve(path)
	return a, opErr("resolve", path, err)
}

func (s *Store) resolve(path string) (Attr, error) {
	a, err := s.stat(RootIno)
	if err != nil {
		return Attr{}, err
	}
	for _, name := range strings.Split(path, "/") {
		if name == "" {
			continue
		}
		if err := throughDir(a); err != nil {
			return Attr{}, err
		}
		if a, err = s.lookup(a.Ino, name); err != nil {
			return Attr{}, err
		}
	}
	return a, nil
}

// ResolveParent returns the directory that holds path's last component,
// and that component. The root has no parent: EINVAL.
func (s *Store) ResolveParent(path string) (dir Attr, name string, err error) {
	path = strings.TrimRight(path, "/")
	i := strings.LastIndexByte(path, '/')
	name = path[i+1:]
	if name == "" {
		return Attr{}, "", opErr("resolve", path, syscall.EINVAL)
	}
	dir, err = s.Resolve(path[:max(i, 0)])
	if err == nil {
		err = opErr("resolve", path, throughDir(dir))
	}
	return dir, name, err
}

// throughDir checks that a path may go on through a, as a directory:
// ENOTDIR for a file, ELOOP for a symbolic link, which the store does not
// follow.
func throughDir(a Attr) error {
	switch {
	case a.IsDir():
		return nil
	case a.IsLink():
		return syscall.ELOOP
	}
	return syscall.ENOTDIR
}

// Put creates or replaces the file at path with data — written to a new
// inode and renamed over the old name, so a reader sees the old content or
// the new, never a mix — and with fsync makes it durable before returning.
func (s *Store) Put(ctx context.Context, path string, data []byte, fsync bool) (Attr, error) {
	dir, name, err := s.ResolveParent(path)
	if err != nil {
		return Attr{}, err
	}
	// A name of its own per Put: concurrent Puts of one path, or one left
	// behind by a crash, never collide.
	suffix := "." + strconv.FormatUint(s.putSeq.Add(1), 36) + "." + strconv.FormatInt(time.Now().UnixNano(), 36)
	tmp := ".put." + name
	if len(tmp)+len(suffix) > engine.NameMax {
		tmp = tmp[:engine.NameMax-len(suffix)]
	}
	tmp += suffix
	a, err := s.Create(dir.Ino, tmp, 0o644)
	if err != nil {
		return Attr{}, err
	}
	fail := func(err error) (Attr, error) {
		_ = s.Unlink(dir.Ino, tmp)
		return Attr{}, err
	}
	if _, err := s.Write(a.Ino, 0, data); err != nil {
		return fail(err)
	}
	if fsync {
		if err := s.Fsync(ctx, a.Ino, false); err != nil {
			return fail(err)
		}
	}
	if err := s.Rename(dir.Ino, tmp, dir.Ino, name); err != nil {
		return fail(err)
	}
	if fsync {
		// The rename is durable only with the directory.
		if err := s.Fsync(ctx, dir.Ino, false); err != nil {
			return Attr{}, err
		}
	}
	return s.Stat(a.Ino)
}

// Get returns the whole content of the file at path.
func (s *Store) Get(path string) ([]byte, error) {
	a, err := s.Resolve(path)
	if err != nil {
		return nil, err
	}
	if a.IsDir() {
		return nil, opErr("get", path, syscall.EISDIR)
	}
	buf := make([]byte, a.Size)
	n, err := s.Read(a.Ino, 0, buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// Reader returns an io.Reader of file ino from offset 0.
func (s *Store) Reader(ino Ino) io.Reader { return &fileReader{s: s, ino: ino} }

type fileReader struct {
	s   *Store
	ino Ino
	off uint64
}

func (r *fileReader) Read(p []byte) (int, error) {
	n, err := r.s.Read(r.ino, r.off, p)
	r.off += uint64(n)
	if err == nil && n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, err
}
