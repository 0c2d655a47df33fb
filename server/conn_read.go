package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"ustore/proto"
)

// The reader: one frame at a time, each under its deadlines and within
// the server's budget of bytes in flight.
//
//	take a slot ─► wait for a byte ─► read the header ─► take the budget ─► read the frame ─► decode
//	(≤ in-flight    (idle timeout,     (frame timeout)    (FIFO; stops       (frame timeout)
//	 max; waits)     not while busy)                       reading; waits)
//
// A request that does not keep its frame buffer (all but write and put)
// gives the buffer and its charge back once decoded, then takes its
// reply's charge (a read's data, a readdir's entries): it waits holding
// nothing, so the budget cannot deadlock (budget.go).

// errIdle and errFrameTimeout are why a read ended on a deadline.
var (
	errIdle         = errors.New("server: idle connection closed")
	errFrameTimeout = errors.New("server: a frame did not arrive whole in time")
)

// readLoop reads and starts requests until the connection ends. It returns
// the connection's last frame to send, if any: StatusBadMessage after a
// malformed frame, StatusTimedOut after a deadline, StatusShutdown after a
// shutdown.
func (c *conn) readLoop(limits proto.Limits) *response {
	for {
		c.flushBeforeWait()
		if c.stopping.Load() {
			// Before the select, which could pick a free slot over a
			// closed stopCh.
			return c.shutdownFrame()
		}
		select {
		case c.slots <- struct{}{}:
		case <-c.stopCh:
			return c.shutdownFrame()
		}
		f, buf, charge, err := c.readRequest(limits)
		if err != nil {
			<-c.slots
			return c.readFailed(err)
		}
		// f (its payload, the data of a write or put) is in buf: buf goes
		// back to its pool when the request is done with it.
		c.requests.Add(1)
		req, err := proto.DecodeRequest(f.Op, f.Payload)
		switch {
		case errors.Is(err, proto.ErrUnknownOp), errors.Is(err, proto.ErrOverLimit):
			// Well-framed: answered (ENOSYS, EINVAL), and the
			// connection goes on. The charge covers a small reply.
			proto.PutBuffer(buf)
			if !c.track(f.ID) {
				<-c.slots
				c.s.budget.release(charge)
				return c.lastFrame(0, 0, proto.StatusBadMessage, fmt.Sprintf("request id %d is already in flight", f.ID))
			}
			c.answer(c.encode(f.ID, f.Op, nil, nil, err, charge))
			continue
		case err != nil:
			proto.PutBuffer(buf)
			<-c.slots
			c.s.budget.release(charge)
			c.logLimited(c.s.protoLog, "malformed request; closing the connection", "id", f.ID, "op", f.Op, "err", err)
			if c.isInflight(f.ID) {
				return c.lastFrame(0, 0, proto.StatusBadMessage, err.Error())
			}
			return c.lastFrame(f.ID, f.Op, proto.StatusBadMessage, err.Error())
		}
		if !c.track(f.ID) {
			proto.PutBuffer(buf)
			<-c.slots
			c.s.budget.release(charge)
			c.logLimited(c.s.protoLog, "request id reused while in flight; closing the connection", "id", f.ID)
			return c.lastFrame(0, 0, proto.StatusBadMessage, fmt.Sprintf("request id %d is already in flight", f.ID))
		}
		if !keepsFrame(f.Op) {
			// Nothing of the request is needed any more: its buffer goes
			// back, and the request holds its reply's charge instead.
			proto.PutBuffer(buf)
			buf = nil
			charge = c.rechargeForReply(charge, int64(proto.BufferCap(replySizeMax(req, limits))))
			if charge == 0 {
				// The connection's context ended while waiting: the peer
				// is gone or the shutdown forced.
				c.untrack(f.ID)
				<-c.slots
				return nil
			}
		}
		ctx, rt := c.startRequest(req, f.Trace)
		if runsInline(req) {
			c.runInline(ctx, rt, f.ID, req, buf, limits, charge)
			continue
		}
		if r, ok := req.(*proto.Read); ok && c.readCached(ctx, rt, f.ID, r, limits, charge) {
			continue
		}
		if c.namespaceNoWait(ctx, rt, f.ID, req, buf, limits, charge) {
			continue
		}
		c.workers.Add(1)
		go c.run(ctx, rt, f.ID, req, buf, limits, charge)
	}
}

// readRequest reads the next request frame into a buffer charged to the
// budget. On success the caller owns buf and charge; on failure both are
// given back.
func (c *conn) readRequest(limits proto.Limits) (f proto.Frame, buf *[]byte, charge int64, err error) {
	if err := c.awaitFrame(); err != nil {
		return f, nil, 0, err
	}
	// A frame already read whole needs no deadline to arrive.
	whole := c.frameBuffered()
	if err := c.frameDeadline(whole); err != nil {
		return f, nil, 0, err
	}
	h, err := c.br.Peek(6) // size, kind, op
	if err != nil {
		if errors.Is(err, io.EOF) {
			// The client stopped inside a frame: ReadFrame says how
			// (it reads nothing more and allocates nothing).
			_, err = proto.ReadFrame(c.br, proto.KindRequest, limits.FrameSizeMax, nil)
		}
		return f, nil, 0, c.frameErr(err)
	}
	size := binary.LittleEndian.Uint32(h)
	charge = int64(proto.FrameBufferCap(size, limits.FrameSizeMax))
	if keepsFrame(proto.Op(h[5])) {
		// Its reply is taken now with the frame: it will be encoded
		// while the frame is still held.
		charge += proto.BufferSmall
	}
	select {
	case <-c.stopCh:
		return f, nil, 0, os.ErrDeadlineExceeded // stopping: readFailed says so
	default:
	}
	if !c.s.budget.acquire(c.stopCh, charge) {
		return f, nil, 0, os.ErrDeadlineExceeded
	}
	// The wait for the budget is not the client's: its frame's clock
	// starts again.
	if err := c.frameDeadline(whole); err != nil {
		c.s.budget.release(charge)
		return f, nil, 0, err
	}
	buf = proto.FrameBuffer(c.br, limits.FrameSizeMax)
	f, err = proto.ReadFrame(c.br, proto.KindRequest, limits.FrameSizeMax, *buf)
	if err != nil {
		proto.PutBuffer(buf)
		c.s.budget.release(charge)
		return f, nil, 0, c.frameErr(err)
	}
	return f, buf, charge, nil
}

// awaitFrame waits for the first byte of the next frame. With no request
// in flight and no handle held the wait is bounded by the idle timeout;
// with requests in flight the client is waiting for them, and with
// handles it holds files open (a process with a file open for hours):
// not idle, and the wait goes on.
func (c *conn) awaitFrame() error {
	if c.br.Buffered() > 0 {
		// Its first byte is here: no wait.
		if c.stopping.Load() {
			return os.ErrDeadlineExceeded
		}
		return nil
	}
	for {
		if err := c.setReadDeadline(c.s.opts.IdleTimeout); err != nil {
			return err
		}
		_, err := c.br.Peek(1)
		if err == nil {
			return nil
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) || c.stopping.Load() {
			return err
		}
		if len(c.slots) == 1 && c.handles.count() == 0 { // only the slot this frame holds
			return errIdle
		}
	}
}

// frameDeadline gives the frame being read FrameTimeout to arrive whole,
// unless it already has (whole): then it only checks for a stop.
func (c *conn) frameDeadline(whole bool) error {
	if whole {
		if c.stopping.Load() {
			return os.ErrDeadlineExceeded
		}
		return nil
	}
	return c.setReadDeadline(c.s.opts.FrameTimeout)
}

// setReadDeadline makes nc's read deadline at least d from now (none if
// d < 0; coarseDeadline: at most a sixteenth more), unless a stop has set
// its own: then it reports the stop as a deadline.
func (c *conn) setReadDeadline(d time.Duration) error {
	c.rd.ensure(time.Now(), d, c.nc.SetReadDeadline)
	// After the set: a stop before it is seen here, a stop after it sets
	// its deadline after this one.
	if c.stopping.Load() {
		return os.ErrDeadlineExceeded
	}
	return nil
}

// frameErr turns a deadline inside a started frame into errFrameTimeout.
func (c *conn) frameErr(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) && !c.stopping.Load() {
		return errFrameTimeout
	}
	return err
}

// rechargeForReply turns a request's charge into its reply's: a smaller
// one keeps part of what it holds; a larger one gives everything back
// first and then waits (holding nothing: no deadlock). It returns the new
// charge, or 0 if the connection's context ended while waiting.
func (c *conn) rechargeForReply(charge, reply int64) int64 {
	if reply <= charge {
		c.s.budget.release(charge - reply)
		return reply
	}
	c.s.budget.release(charge)
	if !c.s.budget.acquire(c.ctx.Done(), reply) {
		return 0
	}
	return reply
}

// keepsFrame reports whether a request of op keeps its frame buffer while
// it runs: a write's and a put's data alias it.
func keepsFrame(op proto.Op) bool {
	return op == proto.OpWrite || op == proto.OpPut
}

// replySizeMax is the largest response req can get under limits: the size
// its response buffer is taken at, so that encoding never grows it.
func replySizeMax(req proto.Request, limits proto.Limits) int {
	switch r := req.(type) {
	case *proto.Read:
		return responseHeaderSize + int(min(r.Len, limits.IOSizeMax()))
	case *proto.Get:
		return responseHeaderSize + attrSize + int(limits.IOSizeMax())
	case *proto.ReadDir:
		return readDirReplyMax(r.Max)
	case *proto.Readlink:
		return responseHeaderSize + 2 + proto.SymlinkTargetMax
	case *proto.GetXattr:
		return responseHeaderSize + 4 + int(r.Size)
	case *proto.ListXattr:
		return responseHeaderSize + 4 + int(r.Size)
	}
	// An Attr, a StatFS reply, a write count, or a failure's message.
	return 0
}

// readFailed decides what a failed read means: the end of a clean
// connection, a shutdown, a deadline, a peer gone, or a malformed frame.
func (c *conn) readFailed(err error) *response {
	switch {
	case c.stopping.Load():
		return c.shutdownFrame()
	case errors.Is(err, io.EOF):
		// The client closed at a frame boundary: the requests under way
		// finish, their responses go out if it still reads.
		return nil
	case errors.Is(err, errIdle):
		c.log.Debug("idle connection closed", "idle_timeout", c.s.opts.IdleTimeout)
		return c.lastFrame(0, 0, proto.StatusTimedOut, fmt.Sprintf("idle for %v: connection closed", c.s.opts.IdleTimeout))
	case errors.Is(err, errFrameTimeout):
		c.logLimited(c.s.protoLog, "a frame did not arrive whole in time; closing the connection", "frame_timeout", c.s.opts.FrameTimeout)
		return c.lastFrame(0, 0, proto.StatusTimedOut, fmt.Sprintf("a frame did not arrive whole within %v", c.s.opts.FrameTimeout))
	case errors.Is(err, proto.ErrMalformed):
		c.logLimited(c.s.protoLog, "malformed frame; closing the connection", "err", err)
		return c.lastFrame(0, 0, proto.StatusBadMessage, err.Error())
	default:
		// The peer is gone (a reset, a closed socket): nobody will read
		// the responses; cancel the requests under way.
		c.log.Debug("read failed; closing the connection", "err", err)
		c.cancel()
		return nil
	}
}

func (c *conn) shutdownFrame() *response {
	return c.lastFrame(0, 0, proto.StatusShutdown, "the server is shutting down")
}
