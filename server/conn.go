package server

import (
	"bufio"
	"context"
	"errors"
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
// Goroutines: serve (the reader: handshake, then one frame at a time; it
// also serves the requests that run inline, conn_inline.go, and writes
// their responses), writeLoop (the writer of the workers' responses), and
// one worker per other request in flight. Who touches what:
//   - slots: the reader takes a token before it reads a frame; the writer
//     gives it back once the frame's response is written. len(slots) is
//     the number of requests read and not yet answered. An inline
//     request's slot is given back by the reader once it wrote the
//     response.
//   - the server's budget: the reader takes each request's bytes
//     (conn_read.go); the writer gives them back with the slot. A
//     response carries its request's charge.
//   - bw, broken and nc's write deadline: under wmu, taken by the writer
//     for each response and by the reader for each inline one.
//   - out: workers send their responses (each holds a slot); the reader
//     writes its ENOSYS and EINVAL answers itself, as it does inline
//     responses, and sends, after every worker has ended, the
//     connection's last frame; then it closes out.
//     cap(out) is in-flight max + 1, so no send ever blocks.
//   - inflight: the ids read and not yet answered, under mu. The reader
//     adds, whoever writes the response removes just before writing it
//     (so that a client reusing an id after reading its response is
//     never refused).
//   - nc's read deadline: the reader's (idle, frame), and stop's (now),
//     which the reader never overrides: it checks stopping after it sets
//     one. The write deadline: whoever holds wmu.
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

	wmu    sync.Mutex // bw, broken, nc's write deadline (wd)
	wd     coarseDeadline
	rd     coarseDeadline // nc's read deadline: the reader's
	broken bool           // a write failed: nothing more is written
	// unflushed is the reader's own: an inline response it wrote and did
	// not flush, because another whole frame was already buffered.
	unflushed bool

	mu       sync.Mutex
	inflight map[uint64]struct{}

	stopping atomic.Bool // graceful shutdown asked: read no more frames
	stopCh   chan struct{}
	stopOnce sync.Once

	requests atomic.Uint64 // served, for the close log

	handles handleTable // the connection's open files (conn_handles.go)
}

// response is one encoded frame for the writer. buf is returned to its pool
// once written; id (not 0) leaves inflight just before; slot says whether
// writing it gives a slot back; charge is the budget bytes it gives back.
type response struct {
	buf    *[]byte
	id     uint64
	slot   bool
	charge int64
}

func newConn(s *Server, nc *net.UnixConn, id uint64) *conn {
	ctx, cancel := context.WithCancel(s.base)
	return &conn{
		s: s, nc: nc, id: id, log: s.log.With("conn", id),
		ctx: ctx, cancel: cancel,
		inflight: map[uint64]struct{}{},
		stopCh:   make(chan struct{}),
		handles:  handleTable{max: s.opts.HandlesPerConnMax, next: &s.handleSeq},
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
	verdict, counted := c.s.admit(peer.UID)
	if counted {
		defer c.s.leave(peer.UID)
	}
	if verdict == dropped {
		c.logLimited(c.s.limitLog, "connection over the limits; closed at once", "uid", peer.UID,
			"conn_max", c.s.opts.ConnMax, "conn_reserved", c.s.opts.ConnReserved, "conn_per_uid_max", c.s.opts.ConnPerUIDMax)
		return
	}
	limits, ok := c.handshake(peer, verdict)
	if !ok {
		return
	}
	// The buffers only now: a refused or silent peer costs none.
	c.br = bufio.NewReaderSize(c.nc, readBufferSize)
	c.bw = bufio.NewWriterSize(c.nc, writeBufferSize)
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
	// No request of the connection runs now: its handles go, however it
	// ended, before its last frame.
	if n, err := c.handles.releaseAll(c.s.st); n > 0 || err != nil {
		c.log.Debug("connection's handles released", "handles", n, "err", err)
	}
	if last != nil {
		c.out <- *last
	}
	close(c.out)
	<-writerDone
	c.log.Debug("connection closed", "requests", c.requests.Load())
}

// logLimited writes a WARN line through l: at most one per interval, with
// the count of lines suppressed before it.
func (c *conn) logLimited(l *logLimit, msg string, args ...any) {
	if ok, n := l.allow(); ok {
		c.log.Warn(msg, append(args, "suppressed", n)...)
	}
}

// handshake reads the client's hello and answers it: refused with EACCES
// if the peer is not on the allow-list, EBUSY if it is over its
// connection limit (verdict), StatusVersion or StatusBadMessage for a
// hello it cannot accept. It reports whether the connection goes on. The
// hello is read straight from nc (exactly its 8 bytes), before the
// connection's buffers exist.
func (c *conn) handshake(peer peerCred, verdict admission) (proto.Limits, bool) {
	allowed := c.s.allow.allows(peer)
	timeout := helloTimeout
	if !allowed || verdict != admitted {
		timeout = time.Duration(c.s.refuseTimeout.Load())
	}
	c.nc.SetReadDeadline(time.Now().Add(timeout))
	h, err := proto.ReadHello(c.nc)
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
		c.logLimited(c.s.refusedLog, "peer refused: not on the allow-list", "err", ErrPeerRefused, "groups", peer.Groups,
			"allow_uids", c.s.allow.uids, "allow_gids", c.s.allow.gids)
		reply(proto.HelloReply{Status: proto.StatusAccess})
		return proto.Limits{}, false
	}
	if verdict == refusedBusy {
		c.logLimited(c.s.limitLog, "peer refused: too many connections for its uid", "conn_per_uid_max", c.s.opts.ConnPerUIDMax)
		reply(proto.HelloReply{Status: proto.StatusBusy})
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

// untrack removes id from the ids in flight, for a request given up before
// it ran.
func (c *conn) untrack(id uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.inflight, id)
}

func (c *conn) isInflight(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.inflight[id]
	return ok
}
