package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"ustore/proto"
)

// The read role: whoever reads the connection's responses.
//
// There is no reader goroutine waiting on the socket for every response.
// A caller that waits for its reply and finds nobody reading reads the
// socket itself — its own response and any others that come first, each
// handed to its call — and leaves the role when its own has come. At
// depth 1 a request is then a write and a read on the caller's goroutine,
// like the echo it is measured against: a response handed from a reader
// goroutine to its caller cost a second thread wake-up per request between
// two processes (docs/BENCHMARKS.md, "The client reads its own replies").
//
// A caller leaving the role hands it to a caller already waiting (a lead
// token in its result channel), or, when calls are still in flight and
// nobody waits for them (a stream's read-ahead, write-behind, calls whose
// callers gave up), to a background reader, which reads until none is in
// flight or a caller waits. A call sent to be awaited later (send, not
// sendAwaited) starts that background reader itself when nobody reads: a
// response left unread would stall the server's writes to the connection,
// and past its write timeout end it. So while calls are in flight someone
// reads, or the caller of do is about to. With no call in flight nobody
// reads: what the server says to an idle connection (its idle close, its
// shutdown) is read by the next call, whose write then fails with EPIPE —
// the frame reached no one, so after an idle close it is sent again on a
// new connection — or by Err, which looks without waiting for anything to
// arrive (it reads a frame that has begun to).

// await waits for cl's result, reading the connection itself when nobody
// else does. When ctx ends first, the call is abandoned (its response will
// be dropped) and ctx's error returned.
func (c *Client) await(ctx context.Context, cl *call) (result, error) {
	return cl.cn.await(ctx, cl)
}

func (c *conn) await(ctx context.Context, cl *call) (result, error) {
	select {
	case r := <-cl.res:
		if !r.lead {
			return r, r.err
		}
		return c.lead(ctx, cl)
	default:
	}
	c.mu.Lock()
	if !c.reading && c.err == nil {
		c.reading = true
		c.mu.Unlock()
		return c.lead(ctx, cl)
	}
	if c.pending[cl.id] == cl {
		c.waitLocked(cl)
	}
	c.mu.Unlock()
	select {
	case r := <-cl.res:
		if r.lead {
			return c.lead(ctx, cl)
		}
		return r, r.err
	case <-ctx.Done():
		c.abandon(cl)
		return result{}, ctx.Err()
	}
}

// lead reads responses, holding the read role, until cl's comes (or the
// connection ends, or ctx does), then leaves the role.
func (c *conn) lead(ctx context.Context, cl *call) (result, error) {
	stop := func() bool { return true }
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, c.interrupt)
	}
	defer stop()
	for {
		select {
		case r := <-cl.res:
			c.leave()
			return r, r.err
		default:
		}
		if err := ctx.Err(); err != nil {
			c.abandon(cl)
			c.leave()
			return result{}, err
		}
		c.readOne()
	}
}

// readBackground reads responses for calls nobody waits for, holding the
// read role, until none is in flight or a caller waits (it gets the role)
// or the connection ends.
func (c *conn) readBackground() {
	for {
		c.mu.Lock()
		if c.err != nil || len(c.pending) == 0 {
			c.reading = false
			c.endedLocked()
			c.mu.Unlock()
			return
		}
		if c.handToWaiterLocked() {
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		c.readOne()
	}
}

// leave gives up the read role: to a waiting caller, to a new background
// reader when calls nobody waits for are in flight, or to no one.
func (c *conn) leave() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.leaveLocked()
}

// leaveLocked is leave for a caller holding mu.
func (c *conn) leaveLocked() {
	if c.err == nil && c.handToWaiterLocked() {
		return
	}
	if c.err == nil && len(c.pending) > 0 {
		go c.readBackground()
		return
	}
	c.reading = false
	c.endedLocked()
}

// handToWaiterLocked hands the read role to the oldest caller still
// waiting, if any. The caller holds mu and the role.
func (c *conn) handToWaiterLocked() bool {
	for len(c.waiters) > 0 {
		w := c.waiters[0]
		c.waiters[0] = nil
		c.waiters = c.waiters[1:]
		if w.waiting {
			c.stopWaitingLocked(w)
			w.res <- result{lead: true}
			return true
		}
	}
	c.waiters = c.waiters[:0:0]
	return false
}

// waitLocked registers cl's caller as waiting for its result while
// another goroutine reads. Entries whose callers stopped waiting are
// dropped when they outnumber the waiting ones, so that waiters stays
// within twice the callers waiting however long one read lasts.
func (c *conn) waitLocked(cl *call) {
	if len(c.waiters) >= 2*c.nWaiting+16 {
		kept := c.waiters[:0]
		for _, w := range c.waiters {
			if w.waiting {
				kept = append(kept, w)
			}
		}
		clear(c.waiters[len(kept):])
		c.waiters = kept
	}
	cl.waiting = true
	c.nWaiting++
	c.waiters = append(c.waiters, cl)
}

// stopWaitingLocked marks cl's caller as no longer waiting (its result or
// the read role is handed to it, or it gave up).
func (c *conn) stopWaitingLocked(cl *call) {
	if cl.waiting {
		cl.waiting = false
		c.nWaiting--
	}
}

// ensureReader starts a background reader when calls are in flight and
// nobody reads: a call sent for a later await, or a sender waiting for a
// slot, needs the responses read.
func (c *conn) ensureReader() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.reading && c.err == nil && len(c.pending) > 0 {
		c.reading = true
		go c.readBackground()
	}
}

// endedLocked closes done once the connection has ended and nobody reads
// it any more. The caller holds mu.
func (c *conn) endedLocked() {
	if c.err != nil && !c.reading && !c.doneClosed {
		c.doneClosed = true
		close(c.done)
	}
}

// interrupt cuts the read role's wait for the next frame, never a frame
// being read: a frame read in part would break the stream. It is the
// reading caller's context's AfterFunc; a late one (its caller has left the
// role) cuts its successor's wait, which finds its own context alive and
// waits again.
func (c *conn) interrupt() {
	c.rdMu.Lock()
	defer c.rdMu.Unlock()
	if !c.inFrame {
		c.nc.SetReadDeadline(time.Now())
		c.deadlineSet = true
	}
}

// clearDeadlineLocked removes a deadline interrupt set. The caller holds
// rdMu.
func (c *conn) clearDeadlineLocked() {
	if c.deadlineSet {
		c.nc.SetReadDeadline(time.Time{})
		c.deadlineSet = false
	}
}

// readOne reads one response and hands it to its call. The caller holds
// the read role. A read cut by interrupt returns having read nothing; a
// connection that ends returns after fail.
func (c *conn) readOne() {
	if _, err := c.br.Peek(1); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			c.rdMu.Lock()
			c.clearDeadlineLocked()
			c.rdMu.Unlock()
			return
		}
		c.fail(fmt.Errorf("read: %w", err))
		return
	}
	c.rdMu.Lock()
	c.inFrame = true
	c.clearDeadlineLocked()
	c.rdMu.Unlock()
	defer func() {
		c.rdMu.Lock()
		c.inFrame = false
		c.rdMu.Unlock()
	}()
	buf := proto.FrameBuffer(c.br, c.limits.FrameSizeMax)
	f, err := proto.ReadFrame(c.br, proto.KindResponse, c.limits.FrameSizeMax, *buf)
	if err != nil {
		proto.PutBuffer(buf)
		c.fail(fmt.Errorf("read: %w", err))
		return
	}
	if f.ID == 0 {
		// About the connection: the server closes after it.
		proto.PutBuffer(buf)
		c.mu.Lock()
		c.timedOut = c.err == nil && f.Status == proto.StatusTimedOut
		c.mu.Unlock()
		c.fail(fmt.Errorf("the server closed the connection: %w", proto.Err(f.Status, f.Message)))
		return
	}
	var r result
	if f.Status == proto.StatusOK {
		r.reply, err = proto.DecodeReply(f.Op, f.Payload)
		if err != nil {
			proto.PutBuffer(buf)
			c.fail(fmt.Errorf("response to request %d: %w", f.ID, err))
			return
		}
		r.buf = buf
	} else {
		r.err = proto.Err(f.Status, f.Message)
		proto.PutBuffer(buf)
	}
	c.mu.Lock()
	cl, ok := c.pending[f.ID]
	if !ok || cl.op != f.Op {
		c.mu.Unlock()
		proto.PutBuffer(r.buf)
		c.fail(fmt.Errorf("%w: a response (op %v) for request %d, which is not in flight", proto.ErrMalformed, f.Op, f.ID))
		return
	}
	delete(c.pending, f.ID)
	if cl.abandoned {
		proto.PutBuffer(r.buf)
	} else {
		c.stopWaitingLocked(cl)
		cl.res <- r
	}
	c.mu.Unlock()
	<-c.slots
}

// look reads what the server said to a connection nobody reads, without
// waiting: a frame, or the end of the connection. Err calls it, so that an
// idle close or a shutdown is seen before the next call.
func (c *conn) look() {
	c.mu.Lock()
	if c.reading || c.err != nil {
		c.mu.Unlock()
		return
	}
	c.reading = true
	c.mu.Unlock()
	if c.br.Buffered() > 0 || c.readable() {
		c.readOne()
	}
	c.leave()
}

// readable reports whether the socket has a byte to read or has ended,
// without waiting or consuming anything.
func (c *conn) readable() bool {
	rc, err := c.nc.SyscallConn()
	if err != nil {
		return true // closed: the read reports it
	}
	var b [1]byte
	var n int
	var rerr error
	if err := rc.Read(func(fd uintptr) bool {
		n, _, rerr = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true
	}); err != nil {
		return true
	}
	return n > 0 || rerr == nil || !errors.Is(rerr, syscall.EAGAIN)
}
