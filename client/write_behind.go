package client

import (
	"context"
	"errors"
	"fmt"

	"ustore/proto"
)

// WriteBehind sends one file's writes without waiting for each reply, as
// write(2) returns once the page cache has the data and an error of the
// writeback surfaces at fsync. A caller that writes a few blocks and then
// fsyncs (a database's pages, fio's fsync job) waits for one round trip
// of the socket instead of one per write: the writes go out back to back,
// the server answers them together, and Fsync waits for those answers
// before it sends the fsync (docs/PROTOCOL.md, "Write-behind").
//
// The rules it keeps, which the protocol's ordering needs:
//   - a write that overlaps one still in flight waits for that one's reply
//     first: requests in flight together may run in any order, and the
//     later data must win;
//   - Wait, Fsync and ReadAt send nothing until every write sent before
//     them is answered: a request sees only the effects of the requests
//     whose responses had arrived before it was sent;
//   - the first write that failed (or was short and then failed) is
//     reported by the next call, at the latest by Fsync, and from then on
//     nothing more is sent: what was written after a lost write is not
//     trusted to be what the caller meant.
//
// At most inflight writes are in flight; a write past that waits for the
// oldest. Each write in flight holds a copy of its data (a short reply is
// completed with it), so the caller may reuse its buffer at once. A
// WriteBehind is one writer's: it is not safe for concurrent use.
type WriteBehind struct {
	c        *Client
	ino      uint64
	inflight int
	q        []behindWrite // in flight, oldest first
	err      error         // the first failure, reported from then on
}

// behindWrite is one write in flight: its call and its data's copy.
type behindWrite struct {
	cl  *call
	off uint64
	buf *[]byte // the data sent, len(*buf) bytes at off
}

// WriteBehind returns a write-behind writer of file ino with at most
// inflight writes in flight (at least 1; the server's in-flight bound
// caps it too, through the connection's slots).
func (c *Client) WriteBehind(ino uint64, inflight int) *WriteBehind {
	return &WriteBehind{c: c, ino: ino, inflight: max(inflight, 1)}
}

// WriteAt sends a write of p at off and returns once it is sent, or the
// error of an earlier write of this writer. Data over one request's limit
// (Limits().IOSizeMax()) is written as Client.Write writes it, after
// every write in flight is answered.
func (w *WriteBehind) WriteAt(ctx context.Context, p []byte, off uint64) error {
	if w.err != nil {
		return w.err
	}
	if len(p) > int(w.c.Limits().IOSizeMax()) {
		if err := w.Wait(ctx); err != nil {
			return err
		}
		n, err := w.c.Write(ctx, w.ino, off, p)
		return w.failed(off, n, len(p), err)
	}
	end := off + uint64(len(p))
	for i := 0; i < len(w.q); {
		if b := w.q[i]; b.off < end && off < b.off+uint64(len(*b.buf)) {
			// Overlaps a write in flight: everything up to it is
			// answered first (the queue stays oldest first).
			if err := w.awaitOldest(ctx, i+1); err != nil {
				return err
			}
			i = 0
			continue
		}
		i++
	}
	if len(w.q) >= w.inflight {
		if err := w.awaitOldest(ctx, len(w.q)-w.inflight+1); err != nil {
			return err
		}
	}
	buf := proto.GetBuffer(len(p))
	*buf = append((*buf)[:0], p...)
	cl, err := w.c.send(ctx, &proto.Write{Ino: w.ino, Off: off, Data: *buf})
	if err != nil {
		proto.PutBuffer(buf)
		w.err = fmt.Errorf("write-behind of inode %d at %d: %w", w.ino, off, err)
		return w.err
	}
	w.q = append(w.q, behindWrite{cl: cl, off: off, buf: buf})
	return nil
}

// Wait waits until every write sent is answered, and returns the first
// error among them (or an earlier one).
func (w *WriteBehind) Wait(ctx context.Context) error {
	if err := w.awaitOldest(ctx, len(w.q)); err != nil {
		return err
	}
	return w.err
}

// Fsync waits for every write sent, then fsyncs the file (Client.Fsync):
// it returns the first write's error instead, without an fsync, when one
// failed.
func (w *WriteBehind) Fsync(ctx context.Context, datasync bool) error {
	if err := w.Wait(ctx); err != nil {
		return err
	}
	return w.c.Fsync(ctx, w.ino, datasync)
}

// ReadAt reads len(buf) bytes at off (Client.Read) once every write sent
// is answered, so that it sees them.
func (w *WriteBehind) ReadAt(ctx context.Context, buf []byte, off uint64) (int, error) {
	if err := w.Wait(ctx); err != nil {
		return 0, err
	}
	return w.c.Read(ctx, w.ino, off, buf)
}

// Close waits for every write sent (Wait); the writer sends nothing after
// it.
func (w *WriteBehind) Close(ctx context.Context) error {
	err := w.Wait(ctx)
	if w.err == nil {
		w.err = errors.New("write-behind: closed")
	}
	return err
}

// awaitOldest waits for the replies of the n oldest writes in flight. A
// short reply is completed with a write of the rest, which goes on or
// reports why (as Client.Write). When ctx ends, every write in flight is
// abandoned and the writer fails with ctx's error: what reached the file
// is not known.
func (w *WriteBehind) awaitOldest(ctx context.Context, n int) error {
	for range n {
		b := w.q[0]
		r, err := w.c.await(ctx, b.cl)
		if err != nil && ctx.Err() != nil {
			w.abandonAll()
			if w.err == nil {
				w.err = fmt.Errorf("write-behind of inode %d: %w", w.ino, err)
			}
			return w.err
		}
		w.q = w.q[1:]
		if err == nil {
			got := int(r.reply.(*proto.WriteReply).N)
			proto.PutBuffer(r.buf)
			if got < len(*b.buf) && w.err == nil {
				var more int
				more, err = w.c.Write(ctx, w.ino, b.off+uint64(got), (*b.buf)[got:])
				err = w.failed(b.off, got+more, len(*b.buf), err)
			}
		} else {
			err = w.failed(b.off, 0, len(*b.buf), err)
		}
		proto.PutBuffer(b.buf)
		if err != nil && w.err == nil {
			w.err = err
		}
	}
	return w.err
}

// failed records the outcome of a write of want bytes at off of which n
// were written: the writer's error when it failed or came up short.
func (w *WriteBehind) failed(off uint64, n, want int, err error) error {
	if err == nil && n < want {
		err = fmt.Errorf("short write: %d of %d bytes", n, want)
	}
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("write-behind of inode %d at %d: %w", w.ino, off, err)
	}
	return w.err
}

// abandonAll gives up on every write in flight.
func (w *WriteBehind) abandonAll() {
	for _, b := range w.q {
		w.c.abandon(b.cl)
		proto.PutBuffer(b.buf)
	}
	w.q = nil
}
