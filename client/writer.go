package client

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"strings"
	"syscall"

	"ustore/proto"
)

// Writer streams a new content into a path, as Put does: it writes a
// temporary file in the path's directory with pipelined chunks, and Close
// renames it over the path (with fsync, making the file and the name
// durable first). Readers see the old content or the new, never a part.
// On any failure, or Abort, the temporary file is removed. It is not safe
// for concurrent use; its context is the one given to OpenWriter.
type Writer struct {
	c        *Client
	ctx      context.Context
	path     string
	dir      uint64
	name     string
	tmp      string
	ino      uint64
	fsync    bool
	chunk    *[]byte // the chunk being filled
	off      uint64  // the file offset of the chunk being filled
	q        []chunk // writes in flight (pos is the offset)
	err      error
	closed   bool
	attr     proto.Attr
	abortErr error
}

// OpenWriter starts a new content for the file at path: its directory must
// exist; the file is created or replaced at Close.
func (c *Client) OpenWriter(ctx context.Context, path string, fsync bool) (*Writer, error) {
	dirPath, name := splitPath(path)
	if name == "" {
		return nil, &fs.PathError{Op: "put", Path: path, Err: syscall.EINVAL}
	}
	d, err := c.Resolve(ctx, dirPath)
	if err != nil {
		return nil, err
	}
	if !d.IsDir() {
		return nil, &fs.PathError{Op: "put", Path: path, Err: syscall.ENOTDIR}
	}
	if len(name) > proto.NameLenMax {
		return nil, &fs.PathError{Op: "put", Path: path, Err: syscall.ENAMETOOLONG}
	}
	tmp := tmpName(name)
	a, err := c.Create(ctx, d.Ino, tmp, 0o644)
	if err != nil {
		return nil, err
	}
	return &Writer{c: c, ctx: ctx, path: path, dir: d.Ino, name: name, tmp: tmp, ino: a.Ino, fsync: fsync,
		chunk: proto.GetBuffer(proto.FrameSizeMax)}, nil
}

// splitPath splits path into its directory and its last component, as the
// store's ResolveParent: trailing '/' ignored.
func splitPath(path string) (dir, name string) {
	path = strings.TrimRight(path, "/")
	i := strings.LastIndexByte(path, '/')
	return path[:max(i, 0)], path[i+1:]
}

// tmpName is a Writer's temporary name: ".put.<name>.<random>", cut to a
// name's limit; the random part keeps concurrent writers of one path apart.
func tmpName(name string) string {
	suffix := fmt.Sprintf(".%08x", rand.Uint32())
	base := ".put." + name
	if len(base)+len(suffix) > proto.NameLenMax {
		base = base[:proto.NameLenMax-len(suffix)]
	}
	return base + suffix
}

// Write buffers p and sends every full chunk.
func (w *Writer) Write(p []byte) (int, error) {
	if w.closed {
		return 0, ErrClosed
	}
	size := int(w.c.Limits().IOSizeMax())
	n := 0
	for len(p) > 0 {
		if w.err != nil {
			return n, w.err
		}
		k := min(len(p), size-len(*w.chunk))
		*w.chunk = append(*w.chunk, p[:k]...)
		p, n = p[k:], n+k
		if len(*w.chunk) == size {
			w.sendChunk()
		}
	}
	return n, w.err
}

// sendChunk sends the chunk being filled, after waiting for the oldest
// write when streamInflight are in flight, and starts a new one.
func (w *Writer) sendChunk() {
	for len(w.q) >= streamInflight && w.err == nil {
		w.awaitOldest()
	}
	if w.err != nil {
		return
	}
	data := *w.chunk
	cl, err := w.c.send(w.ctx, &proto.Write{Ino: w.ino, Off: w.off, Data: data})
	if err != nil {
		w.err = err
		return
	}
	w.q = append(w.q, chunk{cl: cl, pos: int(w.off), n: len(data), buf: w.chunk})
	w.off += uint64(len(data))
	w.chunk = proto.GetBuffer(proto.FrameSizeMax)
}

// awaitOldest waits for the oldest write in flight. A short one is written
// again from where it stopped, which goes on or reports why.
func (w *Writer) awaitOldest() {
	h := w.q[0]
	w.q = w.q[1:]
	defer proto.PutBuffer(h.buf)
	r, err := w.c.await(w.ctx, h.cl)
	if err != nil {
		w.err = err
		return
	}
	n := int(r.reply.(*proto.WriteReply).N)
	proto.PutBuffer(r.buf)
	if n < h.n {
		if _, err := w.c.writeOnce(w.ctx, w.ino, uint64(h.pos+n), (*h.buf)[n:h.n], 0); err != nil {
			w.err = err
		}
	}
}

// Close sends what is buffered, waits for every write, makes the file
// durable when asked, renames it over the path (and makes the name
// durable when asked). After an error the temporary file is removed and
// the path keeps its old content.
func (w *Writer) Close() error {
	if w.closed {
		if w.err == nil {
			return nil
		}
		return w.err
	}
	w.closed = true
	if w.err == nil && len(*w.chunk) > 0 {
		w.sendChunk()
	}
	for len(w.q) > 0 && w.err == nil {
		w.awaitOldest()
	}
	if w.err == nil && w.fsync {
		w.err = w.c.Fsync(w.ctx, w.ino, false)
	}
	if w.err == nil {
		w.err = w.c.Rename(w.ctx, w.dir, w.tmp, w.dir, w.name)
	}
	if w.err == nil && w.fsync {
		w.err = w.c.Fsync(w.ctx, w.dir, false)
	}
	if w.err == nil {
		w.attr, w.err = w.c.Stat(w.ctx, w.ino)
	}
	w.release()
	return w.err
}

// Abort gives up: the writes in flight are abandoned and the temporary
// file removed; the path keeps its old content.
func (w *Writer) Abort() error {
	if w.closed {
		return w.abortErr
	}
	w.closed = true
	if w.err == nil {
		w.err = errors.New("client: writer aborted")
	}
	w.release()
	return w.abortErr
}

// release gives the buffers back and, after a failure, removes the
// temporary file under a context that outlives the caller's.
func (w *Writer) release() {
	w.c.abandonAll(w.q)
	w.q = nil
	proto.PutBuffer(w.chunk)
	w.chunk = nil
	if w.err == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), cleanupTimeout)
	defer cancel()
	if err := w.c.Unlink(ctx, w.dir, w.tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		w.abortErr = err
	}
}

// Attr is the new file's attributes, after a successful Close.
func (w *Writer) Attr() proto.Attr { return w.attr }
