package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"ustore/internal/assert"
	"ustore/proto"
)

// conn is one client connection.
//
// Goroutines: serve (the reader: handshake, then one frame at a time),
// writeLoop (the only writer of nc after the handshake), and one worker per
// request in flight. Who touches what:
//   - slots: the reader takes a token before it reads a frame; the writer
//     gives it back once the frame's response is written. len(slots) is
//     the number of requests read and not yet answered.
//   - out: workers send their responses (each holds a slot); the reader
//     sends ENOSYS responses (holding a slot) and, after every worker has
//     ended, the connection's last frame; then it closes out. cap(out) is
//     in-flight max + 1, so no send ever blocks.
//   - inflight: the ids read and not yet answered, under mu. The reader
//     adds, the writer removes just before writing the response (so that
//     a client reusing an id after reading its response is never refused).
//   - ctx: the requests' context; cancelled when the peer is gone (a read
//     or write error) or the server forces its shutdown. Cancelling it
//     closes nc.
type conn struct {
	s   *Server
	nc  *net.UnixConn
	id  uint64
	log *slog.Logger

	br *bufio.Reader
	bw *bufio.Writer

	ctx    context.Context
	cancel context.CancelFunc

	slots   chan struct{}
	out     chan response
	workers sync.WaitGroup

	mu       sync.Mutex
	inflight map[uint64]struct{}

	stopping atomic.Bool // graceful shutdown asked: read no more frames
	stopCh   chan struct{}
	stopOnce sync.Once

	requests atomic.Uint64 // served, for the close log
}

// response is one encoded frame for the writer. buf is returned to its pool
// once written; id (not 0) leaves inflight just before; slot says whether
// writing it gives a slot back.
type response struct {
	buf  *[]byte
	id   uint64
	slot bool
}

func newConn(s *Server, nc *net.UnixConn, id uint64) *conn {
	ctx, cancel := context.WithCancel(s.base)
	return &conn{
		s: s, nc: nc, id: id, log: s.log.With("conn", id),
		ctx: ctx, cancel: cancel,
		inflight: map[uint64]struct{}{},
		stopCh:   make(chan struct{}),
	}
}

// stop asks the connection to read no more frames: a blocked read is cut
// by a deadline in the past. Called by the server's shutdown.
func (c *conn) stop() {
	c.stopOnce.Do(func() {
		c.stopping.Store(true)
		close(c.stopCh)
		c.nc.SetReadDeadline(time.Now())
	})
}

// serve runs the connection to its end; every goroutine it started has
// ended when it returns.
func (c *conn) serve() {
	closeOnCancel := context.AfterFunc(c.ctx, func() { c.nc.Close() })
	defer func() {
		closeOnCancel()
		c.cancel()
		c.nc.Close()
	}()
	peer, err := peerCredOf(c.nc)
	if err != nil {
		c.log.Warn("connection without peer credentials; closing", "err", err)
		return
	}
	c.log = c.log.With("pid", peer.PID, "uid", peer.UID, "gid", peer.GID)
	c.br = bufio.NewReaderSize(c.nc, readBufferSize)
	c.bw = bufio.NewWriterSize(c.nc, writeBufferSize)
	limits, ok := c.handshake(peer)
	if !ok {
		return
	}
	c.slots = make(chan struct{}, limits.InflightMax)
	c.out = make(chan response, limits.InflightMax+1)
	c.log.Debug("connection open", "inflight_max", limits.InflightMax, "frame_size_max", limits.FrameSizeMax)

	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
	}()
	last := c.readLoop(limits)
	c.workers.Wait()
	if last != nil {
		c.out <- *last
	}
	close(c.out)
	<-writerDone
	c.log.Debug("connection closed", "requests", c.requests.Load())
}

// handshake reads the client's hello and answers it: refused (EACCES) if
// the peer is not on the allow-list, StatusVersion or StatusBadMessage
// for a hello it cannot accept. It reports whether the connection goes on.
func (c *conn) handshake(peer peerCred) (proto.Limits, bool) {
	allowed := c.s.allow.allows(peer)
	timeout := helloTimeout
	if !allowed {
		timeout = refuseTimeout
	}
	c.nc.SetReadDeadline(time.Now().Add(timeout))
	h, err := proto.ReadHello(c.br)
	c.nc.SetReadDeadline(time.Time{})
	if c.stopping.Load() {
		// Checked after the deadline is cleared: a stop before the clear
		// is seen here, a stop after it sets its own deadline.
		return proto.Limits{}, false
	}
	reply := func(r proto.HelloReply) {
		b, aerr := proto.AppendHelloReply(nil, r)
		assert.That(aerr == nil, "server: hello reply does not encode")
		c.nc.SetWriteDeadline(time.Now().Add(helloTimeout))
		c.nc.Write(b)
		c.nc.SetWriteDeadline(time.Time{})
	}
	if !allowed {
		c.log.Warn("peer refused: not on the allow-list", "err", ErrPeerRefused, "groups", peer.Groups,
			"allow_uids", c.s.allow.uids, "allow_gids", c.s.allow.gids)
		reply(proto.HelloReply{Status: proto.StatusAccess})
		return proto.Limits{}, false
	}
	if errors.Is(err, io.EOF) {
		c.log.Debug("client closed before its hello")
		return proto.Limits{}, false
	}
	if err == nil {
		var v uint16
		if v, err = proto.Negotiate(h); err == nil {
			reply(proto.HelloReply{Status: proto.StatusOK, Version: v, Limits: c.s.limits})
			return c.s.limits, true
		}
	}
	c.log.Warn("handshake failed", "err", err)
	if s := proto.StatusOf(err); s == proto.StatusVersion || s == proto.StatusBadMessage {
		reply(proto.HelloReply{Status: s})
	}
	return proto.Limits{}, false
}

// readLoop reads and starts requests until the connection ends. It returns
// the connection's last frame to send, if any: StatusBadMessage after a
// malformed frame, StatusShutdown after a shutdown.
func (c *conn) readLoop(limits proto.Limits) *response {
	for {
		if c.stopping.Load() {
			// Before the select, which could pick a free slot over a
			// closed stopCh.
			return c.lastFrame(0, 0, proto.StatusShutdown, "the server is shutting down")
		}
		select {
		case c.slots <- struct{}{}:
		case <-c.stopCh:
			return c.lastFrame(0, 0, proto.StatusShutdown, "the server is shutting down")
		}
		buf := proto.FrameBuffer(c.br, limits.FrameSizeMax)
		f, err := proto.ReadFrame(c.br, proto.KindRequest, limits.FrameSizeMax, *buf)
		if err != nil {
			proto.PutBuffer(buf)
			<-c.slots
			return c.readFailed(err)
		}
		// f (its payload, the data of a write or put) is in buf: buf goes
		// back to its pool when the request is done with it.
		c.requests.Add(1)
		req, err := proto.DecodeRequest(f.Op, f.Payload)
		switch {
		case errors.Is(err, proto.ErrUnknownOp):
			proto.PutBuffer(buf)
			if !c.track(f.ID) {
				<-c.slots
				return c.lastFrame(0, 0, proto.StatusBadMessage, fmt.Sprintf("request id %d is already in flight", f.ID))
			}
			c.respond(f.ID, f.Op, nil, nil, err)
			continue
		case err != nil:
			proto.PutBuffer(buf)
			<-c.slots
			c.log.Warn("malformed request; closing the connection", "id", f.ID, "op", f.Op, "err", err)
			if c.isInflight(f.ID) {
				return c.lastFrame(0, 0, proto.StatusBadMessage, err.Error())
			}
			return c.lastFrame(f.ID, f.Op, proto.StatusBadMessage, err.Error())
		}
		if !c.track(f.ID) {
			proto.PutBuffer(buf)
			<-c.slots
			c.log.Warn("request id reused while in flight; closing the connection", "id", f.ID)
			return c.lastFrame(0, 0, proto.StatusBadMessage, fmt.Sprintf("request id %d is already in flight", f.ID))
		}
		c.workers.Add(1)
		go c.run(f.ID, f.Trace, req, buf, limits)
	}
}

// readFailed decides what a failed read means: the end of a clean
// connection, a shutdown, a peer gone, or a malformed frame.
func (c *conn) readFailed(err error) *response {
	switch {
	case c.stopping.Load():
		return c.lastFrame(0, 0, proto.StatusShutdown, "the server is shutting down")
	case errors.Is(err, io.EOF):
		// The client closed at a frame boundary: the requests under way
		// finish, their responses go out if it still reads.
		return nil
	case errors.Is(err, proto.ErrMalformed):
		c.log.Warn("malformed frame; closing the connection", "err", err)
		return c.lastFrame(0, 0, proto.StatusBadMessage, err.Error())
	default:
		// The peer is gone (a reset, a closed socket): nobody will read
		// the responses; cancel the requests under way.
		c.log.Debug("read failed; closing the connection", "err", err)
		c.cancel()
		return nil
	}
}

// lastFrame encodes a failed response to end the connection with: for
// request id (op) when the frame that broke the rules named one that is
// not in flight, for the connection (id 0) otherwise.
func (c *conn) lastFrame(id uint64, op proto.Op, s proto.Status, msg string) *response {
	if id == 0 {
		op = 0
	}
	buf := proto.GetBuffer(0)
	b, err := proto.AppendResponse(*buf, id, op, s, msg, nil)
	assert.That(err == nil, "server: a failed response does not encode")
	*buf = b
	return &response{buf: buf}
}

// track adds id to the ids in flight; false if it is already there.
func (c *conn) track(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.inflight[id]; ok {
		return false
	}
	c.inflight[id] = struct{}{}
	return true
}

func (c *conn) isInflight(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.inflight[id]
	return ok
}

// respond encodes the response to request id — reply, or err's status —
// into out (a new buffer if nil) and hands it to the writer; the caller
// holds the request's slot, which the writer gives back.
func (c *conn) respond(id uint64, op proto.Op, out *[]byte, reply proto.Reply, err error) {
	if out == nil {
		out = proto.GetBuffer(0)
	}
	*out = encodeResponse((*out)[:0], id, op, reply, err, c.log)
	c.out <- response{buf: out, id: id, slot: true}
}

// writeLoop writes responses until out is closed, flushing when no other
// response is waiting. After a write error it keeps draining out (giving
// slots and buffers back) so that no worker ever blocks, and cancels the
// connection's context: the peer is gone.
func (c *conn) writeLoop() {
	broken := false
	for r := range c.out {
		if r.id != 0 {
			c.mu.Lock()
			_, ok := c.inflight[r.id]
			delete(c.inflight, r.id)
			c.mu.Unlock()
			assert.That(ok, "server: a response for a request id not in flight")
		}
		if !broken {
			_, err := c.bw.Write(*r.buf)
			if err == nil && len(c.out) == 0 {
				err = c.bw.Flush()
			}
			if err != nil {
				broken = true
				c.log.Debug("write failed; dropping the responses still to come", "err", err)
				c.cancel()
			}
		}
		proto.PutBuffer(r.buf)
		if r.slot {
			<-c.slots
		}
	}
	if !broken {
		c.bw.Flush()
	}
}
