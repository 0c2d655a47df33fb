package client

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"time"

	"ustore/proto"
)

// Data larger than one request's limit (Limits().IOSizeMax()) moves in
// chunks, with up to streamInflight requests in flight: the connection's
// pipeline gives a stream's throughput, and small requests of other
// goroutines interleave with the chunks (docs/PROTOCOL.md, "Streaming").

// streamInflight is how many chunk requests one transfer keeps in flight:
// 8 MiB at 1 MiB chunks keeps the device busy, and leaves most of the
// connection's slots to other callers.
const streamInflight = 8

// getRetries bounds how often Get starts again when the file it read is
// replaced (a concurrent put) before it has read it all.
const getRetries = 3

// cleanupTimeout bounds the removal of a failed Writer's temporary file,
// which runs even when the caller's context has ended.
const cleanupTimeout = 5 * time.Second

// chunk is one request of a transfer in flight: data[pos : pos+n].
type chunk struct {
	cl     *call
	pos, n int
	buf    *[]byte // a Writer's copy of the chunk's data, until it is answered
}

// abandonAll gives up on the chunks still in flight.
func (c *Client) abandonAll(q []chunk) {
	for _, ch := range q {
		c.abandon(ch.cl)
		proto.PutBuffer(ch.buf)
	}
}

// pipeline moves total bytes in chunks of at most size bytes: req makes
// the request of a chunk, take consumes its reply, in order, and says how
// many of its bytes counted. It returns the bytes counted before the first
// chunk that did not count whole (a short read or write), and the first
// error; the chunks after it are abandoned.
func (c *Client) pipeline(ctx context.Context, total, size int,
	req func(pos, n int) proto.Request, take func(pos, n int, reply proto.Reply) int) (done int, err error) {
	q := make([]chunk, 0, streamInflight)
	defer func() { c.abandonAll(q) }()
	sent := 0
	for done < total {
		for len(q) < streamInflight && sent < total {
			n := min(size, total-sent)
			cl, err := c.send(ctx, req(sent, n))
			if err != nil {
				return done, err
			}
			q = append(q, chunk{cl: cl, pos: sent, n: n})
			sent += n
		}
		h := q[0]
		q = q[1:]
		r, err := c.await(ctx, h.cl)
		if err != nil {
			return done, err
		}
		got := take(h.pos, h.n, r.reply)
		proto.PutBuffer(r.buf)
		done += got
		if got < h.n {
			return done, nil
		}
	}
	return done, nil
}

// Write writes data into file ino at off and returns how many bytes were
// written, counted from off: fewer than len(data) only with an error (as
// write(2)). Data over Limits().IOSizeMax() goes in pipelined chunks; if
// one fails, chunks after it may have been written too.
func (c *Client) Write(ctx context.Context, ino, off uint64, data []byte) (int, error) {
	return c.WriteWith(ctx, ino, off, data, 0)
}

// WriteWith is Write with flags: proto.WriteDsync makes the data durable
// before it returns, proto.WriteSync the data and the file's metadata.
func (c *Client) WriteWith(ctx context.Context, ino, off uint64, data []byte, flags proto.WriteFlags) (int, error) {
	size := int(c.Limits().IOSizeMax())
	if len(data) <= size {
		return c.writeOnce(ctx, ino, off, data, flags)
	}
	done, err := c.pipeline(ctx, len(data), size,
		func(pos, n int) proto.Request {
			return &proto.Write{Ino: ino, Off: off + uint64(pos), Data: data[pos : pos+n]}
		},
		func(_, _ int, rep proto.Reply) int { return int(rep.(*proto.WriteReply).N) })
	if err != nil {
		return done, err
	}
	// A short chunk: write the rest one request at a time, which goes on
	// or reports why.
	for done < len(data) {
		n, err := c.writeOnce(ctx, ino, off+uint64(done), data[done:done+min(size, len(data)-done)], 0)
		done += n
		if err != nil {
			return done, err
		}
	}
	if flags&(proto.WriteDsync|proto.WriteSync) != 0 {
		return done, c.Fsync(ctx, ino, flags&proto.WriteSync == 0)
	}
	return done, nil
}

// writeOnce writes data (at most one request's worth). A short reply means
// the rest failed; writing the rest again goes on or reports why.
func (c *Client) writeOnce(ctx context.Context, ino, off uint64, data []byte, flags proto.WriteFlags) (int, error) {
	done := 0
	for {
		rep, buf, err := c.do(ctx, &proto.Write{Ino: ino, Off: off + uint64(done), Flags: flags, Data: data[done:]})
		if err != nil {
			return done, err
		}
		n := int(rep.(*proto.WriteReply).N)
		proto.PutBuffer(buf)
		done += n
		switch {
		case done >= len(data):
			return done, nil
		case n == 0:
			return done, io.ErrShortWrite // the server broke its word: no progress and no error
		}
	}
}

// Read reads up to len(buf) bytes of file ino at off and returns how many
// it read: fewer only at the end of the file (0 at or past it, and no
// error, as the store's Read). More than Limits().IOSizeMax() goes in
// pipelined chunks.
func (c *Client) Read(ctx context.Context, ino, off uint64, buf []byte) (int, error) {
	size := int(c.Limits().IOSizeMax())
	if len(buf) <= size {
		rep, b, err := c.do(ctx, &proto.Read{Ino: ino, Off: off, Len: uint32(len(buf))})
		if err != nil {
			return 0, err
		}
		n := copy(buf, rep.(*proto.ReadReply).Data)
		proto.PutBuffer(b)
		return n, nil
	}
	return c.pipeline(ctx, len(buf), size,
		func(pos, n int) proto.Request {
			return &proto.Read{Ino: ino, Off: off + uint64(pos), Len: uint32(n)}
		},
		func(pos, n int, rep proto.Reply) int { return copy(buf[pos:pos+n], rep.(*proto.ReadReply).Data) })
}

// Put creates or replaces the file at path with data — a new inode renamed
// over the name, so readers see the old content or the new, never a mix —
// and with fsync makes it durable, name included, before it returns. Data
// over Limits().IOSizeMax() goes through OpenWriter.
func (c *Client) Put(ctx context.Context, path string, data []byte, fsync bool) (proto.Attr, error) {
	if len(data) <= int(c.Limits().IOSizeMax()) {
		return c.doAttr(ctx, &proto.Put{Path: path, Fsync: fsync, Data: data})
	}
	w, err := c.OpenWriter(ctx, path, fsync)
	if err != nil {
		return proto.Attr{}, err
	}
	if _, err := w.Write(data); err != nil {
		w.Abort()
		return proto.Attr{}, err
	}
	if err := w.Close(); err != nil {
		return proto.Attr{}, err
	}
	return w.Attr(), nil
}

// Get returns the whole content of the file at path: the first chunk comes
// with get, the rest is read by inode in pipelined chunks. If the file is
// replaced meanwhile, Get starts again (a few times). For large files
// OpenReader streams instead.
func (c *Client) Get(ctx context.Context, path string) ([]byte, error) {
	for try := 0; ; try++ {
		rep, buf, err := c.do(ctx, &proto.Get{Path: path})
		if err != nil {
			return nil, err
		}
		g := rep.(*proto.GetReply)
		ino, size := g.Attr.Ino, g.Attr.Size
		out := make([]byte, max(size, uint64(len(g.Data))))
		first := copy(out, g.Data)
		proto.PutBuffer(buf)
		if uint64(first) >= size {
			return out[:first], nil
		}
		n, err := c.Read(ctx, ino, uint64(first), out[first:])
		if errors.Is(err, fs.ErrNotExist) && try < getRetries {
			continue
		}
		if err != nil {
			return nil, err
		}
		return out[:first+n], nil
	}
}
