package client

import (
	"context"
	"io"

	"ustore/proto"
)

// Reader streams a file: io.Reader over a get and pipelined reads, up to
// the size the file had when it was opened (a file that shrinks meanwhile
// ends early). It is not safe for concurrent use; its context is the one
// given to OpenReader. Close it to give up the reads in flight.
type Reader struct {
	c      *Client
	ctx    context.Context
	attr   proto.Attr
	next   uint64  // the offset of the next read to send
	cur    []byte  // what is left of the chunk being handed out
	curBuf *[]byte // cur's frame buffer
	q      []chunk // reads in flight, in offset order (pos is the offset)
	eof    bool    // no more reads to send
	err    error
}

// OpenReader opens the file at path for reading.
func (c *Client) OpenReader(ctx context.Context, path string) (*Reader, error) {
	rep, buf, err := c.do(ctx, &proto.Get{Path: path})
	if err != nil {
		return nil, err
	}
	g := rep.(*proto.GetReply)
	r := &Reader{c: c, ctx: ctx, attr: g.Attr, cur: g.Data, curBuf: buf, next: uint64(len(g.Data))}
	r.eof = r.next >= r.attr.Size
	return r, nil
}

// Attr is the file's attributes when it was opened.
func (r *Reader) Attr() proto.Attr { return r.attr }

// Read reads up to len(p) bytes; io.EOF at the end.
func (r *Reader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		proto.PutBuffer(r.curBuf)
		r.curBuf = nil
		r.fill()
		if len(r.q) == 0 {
			if r.err != nil {
				return 0, r.err
			}
			return 0, io.EOF
		}
		h := r.q[0]
		r.q = r.q[1:]
		res, err := r.c.await(r.ctx, h.cl)
		if err != nil {
			r.err = err
			return 0, err
		}
		r.cur, r.curBuf = res.reply.(*proto.ReadReply).Data, res.buf
		if len(r.cur) < h.n {
			// The file shrank: nothing after this chunk.
			r.eof = true
			r.c.abandonAll(r.q)
			r.q = r.q[:0]
		}
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// fill sends reads until streamInflight are in flight or the file's end.
func (r *Reader) fill() {
	size := uint64(r.c.Limits().IOSizeMax())
	for !r.eof && r.err == nil && len(r.q) < streamInflight {
		n := min(size, r.attr.Size-r.next)
		cl, err := r.c.send(r.ctx, &proto.Read{Ino: r.attr.Ino, Off: r.next, Len: uint32(n)})
		if err != nil {
			r.err = err
			return
		}
		r.q = append(r.q, chunk{cl: cl, n: int(n)})
		r.next += n
		r.eof = r.next >= r.attr.Size
	}
}

// Close gives up the reads in flight. It always returns nil.
func (r *Reader) Close() error {
	r.c.abandonAll(r.q)
	r.q = nil
	proto.PutBuffer(r.curBuf)
	r.cur, r.curBuf = nil, nil
	if r.err == nil {
		r.err = ErrClosed
	}
	return nil
}
