package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"ustore/proto"
	"ustore/trace"
)

// Options configure a Client. Zero values mean the defaults.
type Options struct {
	// Traceparent returns the W3C traceparent ("00-<trace id>-<span
	// id>-<flags>") of the span in ctx, or "" for none; each request
	// carries it so that the server's span continues the trace. nil means
	// trace.Traceparent: the OpenTelemetry span in ctx, if any. A value
	// that does not parse is not sent.
	Traceparent func(ctx context.Context) string
}

// readBufferSize sizes the connection's bufio reader: many small responses
// per system call; a large frame bypasses it.
const readBufferSize = 64 << 10

// Client is a connection to a server. Its methods may be called from any
// number of goroutines at once; their requests are pipelined on the one
// connection. When the server closes an idle connection (a
// connection-level ETIMEDOUT: the idle or frame timeout), the next call
// dials again; any other end of the connection is final (Err says why).
type Client struct {
	socketPath string
	opts       Options

	dialMu     sync.Mutex // one redial at a time
	cur        atomic.Pointer[conn]
	closed     atomic.Bool
	reconnects atomic.Uint64
}

// conn is one connection of a Client.
//
// Who touches what: send takes a slot, takes an id (nextID, atomic),
// registers the call in pending under mu (unless err is set) and writes
// the frame under wmu. Whoever holds the read role (reading, under mu;
// read_role.go) reads responses from br, takes each one's call out of
// pending under mu and hands it its result under mu; it gives the slot
// back. fail sets err once, under mu, hands it to every call in pending
// and closes the socket; done is closed once err is set and nobody holds
// the read role.
type conn struct {
	nc      *net.UnixConn
	br      *bufio.Reader // the read role's
	opts    Options
	version uint16
	limits  proto.Limits

	slots  chan struct{} // a token per request in flight: limits.InflightMax
	nextID atomic.Uint64

	wmu sync.Mutex // one frame written at a time

	mu         sync.Mutex
	pending    map[uint64]*call
	waiters    []*call // callers waiting for a result while another reads, oldest first; some may have stopped waiting
	nWaiting   int     // how many in waiters still wait: waiters is compacted when mostly stale
	reading    bool    // a goroutine holds the read role
	err        error   // why the connection ended; set once
	timedOut   bool    // it ended with the server's connection-level ETIMEDOUT
	doneClosed bool

	// rdMu guards the read role's deadline against interrupt: a frame is
	// never cut in part.
	rdMu        sync.Mutex
	inFrame     bool // a frame is being read
	deadlineSet bool // interrupt set a read deadline

	done chan struct{} // closed once the connection has ended and nobody reads it
}

// call is one request in flight.
type call struct {
	cn        *conn // the connection it was sent on
	id        uint64
	op        proto.Op
	res       chan result // cap 2: a lead token and its result; nobody blocks on it
	abandoned bool        // under conn.mu: the caller gave up
	waiting   bool        // under conn.mu: its caller waits in await and may be handed the read role
}

// result is a call's outcome: its decoded reply (whose byte slices alias
// buf), or the status of a failed request, or the connection's error — or,
// with lead set, not an outcome: the read role, handed to a waiting caller.
type result struct {
	reply proto.Reply
	buf   *[]byte
	err   error
	lead  bool
}

// Dial connects to the server listening on socketPath and does the
// handshake. ctx bounds the dial and the handshake only.
func Dial(ctx context.Context, socketPath string) (*Client, error) {
	return DialOptions(ctx, socketPath, Options{})
}

// DialOptions is Dial with options.
func DialOptions(ctx context.Context, socketPath string, opts Options) (*Client, error) {
	if opts.Traceparent == nil {
		opts.Traceparent = trace.Traceparent
	}
	cn, err := dial(ctx, socketPath, opts)
	if err != nil {
		return nil, err
	}
	c := &Client{socketPath: socketPath, opts: opts}
	c.cur.Store(cn)
	return c, nil
}

// dial connects, does the handshake and starts the reader.
func dial(ctx context.Context, socketPath string, opts Options) (*conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", socketPath)
	if err != nil {
		return nil, fmt.Errorf("client: dial %s: %w", socketPath, err)
	}
	uc := nc.(*net.UnixConn)
	c := &conn{
		nc: uc, br: bufio.NewReaderSize(uc, readBufferSize), opts: opts,
		pending: map[uint64]*call{}, done: make(chan struct{}),
	}
	if err := c.handshake(ctx); err != nil {
		uc.Close()
		return nil, fmt.Errorf("client: handshake with %s: %w", socketPath, err)
	}
	c.slots = make(chan struct{}, c.limits.InflightMax)
	return c, nil
}

// conn returns the connection to send on: the current one, or, when the
// server closed it for idleness, a new one. Only a connection-level
// ETIMEDOUT redials: the server sends it when no request was in flight,
// or when a frame did not arrive whole, and runs no request it had not
// read, so nothing is lost or run twice. Any other end stays: a server
// that shut down, a protocol error, Close.
func (c *Client) conn(ctx context.Context) (*conn, error) {
	cn := c.cur.Load()
	if !cn.timedOutIdle() {
		return cn, nil
	}
	c.dialMu.Lock()
	defer c.dialMu.Unlock()
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if now := c.cur.Load(); now != cn {
		return now, nil // another call redialed
	}
	next, err := dial(ctx, c.socketPath, c.opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w (reconnecting after: %w)", ErrConnection, err, cn.Err())
	}
	c.cur.Store(next)
	c.reconnects.Add(1)
	return next, nil
}

// timedOutIdle reports whether the server closed c with a
// connection-level ETIMEDOUT.
func (c *conn) timedOutIdle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.timedOut
}

func (c *conn) handshake(ctx context.Context) error {
	dl, hasDeadline := ctx.Deadline()
	if hasDeadline {
		c.nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Now()) })
	hello := proto.ClientHello()
	_, err := c.nc.Write(proto.AppendHello(nil, hello))
	var rep proto.HelloReply
	if err == nil {
		rep, err = proto.ReadHelloReply(c.br, hello)
	}
	if !stop() || ctx.Err() != nil {
		// The context cut the handshake (its deadline may pass a moment
		// after the socket's, which is the same).
		return context.Cause(ctx)
	}
	var ne net.Error
	if hasDeadline && errors.As(err, &ne) && ne.Timeout() && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	c.nc.SetDeadline(time.Time{})
	if err != nil {
		return err
	}
	c.version, c.limits = rep.Version, rep.Limits
	return nil
}

// Limits are the limits the server announced for this connection.
func (c *Client) Limits() proto.Limits { return c.cur.Load().limits }

// Version is the protocol version in use.
func (c *Client) Version() uint16 { return c.cur.Load().version }

// Close closes the connection. Calls in flight fail with ErrClosed.
func (c *Client) Close() error {
	c.dialMu.Lock()
	c.closed.Store(true)
	cn := c.cur.Load()
	c.dialMu.Unlock()
	cn.fail(ErrClosed)
	<-cn.done
	return nil
}

// Reconnects is how many times the client dialed again after the server
// closed an idle connection.
func (c *Client) Reconnects() uint64 { return c.reconnects.Load() }

// Err returns why the connection ended, or nil while it is up. After an
// idle close it says so until the next call dials again.
func (c *Client) Err() error { return c.cur.Load().Err() }

// Err returns why c ended, or nil while it is up. When nobody reads the
// connection, it looks at what the server may have said without waiting.
func (c *conn) Err() error {
	c.look()
	return c.err0()
}

// err0 is Err without the look.
func (c *conn) err0() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// fail ends the connection with err (the first reason wins): every call in
// flight gets it, and the socket is closed, which ends the reader.
func (c *conn) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		if !errors.Is(err, ErrClosed) {
			err = fmt.Errorf("%w: %w", ErrConnection, err)
		}
		c.err = err
	}
	for id, cl := range c.pending {
		delete(c.pending, id)
		if !cl.abandoned {
			c.stopWaitingLocked(cl)
			cl.res <- result{err: c.err}
		}
	}
	c.endedLocked()
	c.mu.Unlock()
	c.nc.Close()
}

// traceparent is ctx's traceparent, or the zero value.
func (c *conn) traceparent(ctx context.Context) proto.Traceparent {
	if c.opts.Traceparent == nil {
		return proto.Traceparent{}
	}
	s := c.opts.Traceparent(ctx)
	if s == "" {
		return proto.Traceparent{}
	}
	t, err := proto.ParseTraceparent(s)
	if err != nil {
		return proto.Traceparent{}
	}
	return t
}

// errUndelivered is a request whose write failed because the server had
// closed the connection: its frame reached nobody.
var errUndelivered = errors.New("client: the request reached no server")

// send takes a slot (waiting, under ctx, while the server's in-flight
// bound is reached), encodes req and writes it. The call it returns is in
// flight: await it, or abandon it. Its caller may await it later (a
// stream's read-ahead, write-behind): its response is read meanwhile by a
// background reader, unless someone holds the read role — a response left
// unread would stall the server's writes to this connection and, past its
// write timeout, end it.
func (c *Client) send(ctx context.Context, req proto.Request) (*call, error) {
	return c.sendCall(ctx, req, false)
}

// sendAwaited is send for a caller that awaits the call at once (do): it
// will take the read role itself.
func (c *Client) sendAwaited(ctx context.Context, req proto.Request) (*call, error) {
	return c.sendCall(ctx, req, true)
}

// sendCall is send and sendAwaited. A request written to a connection the
// server had closed for idleness goes again on a new one, once: the
// server runs nothing it had not read, and this frame it never read.
func (c *Client) sendCall(ctx context.Context, req proto.Request, awaited bool) (*call, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for try := 0; ; try++ {
		cn, err := c.conn(ctx)
		if err != nil {
			return nil, err
		}
		cl, err := cn.send(ctx, req, awaited)
		if errors.Is(err, errUndelivered) {
			if try == 0 && cn.timedOutIdle() {
				continue
			}
			if e := cn.err0(); e != nil {
				err = e
			}
		}
		return cl, err
	}
}

func (c *conn) send(ctx context.Context, req proto.Request, awaited bool) (*call, error) {
	select {
	case c.slots <- struct{}{}:
	default:
		// The bound is reached: the responses of the calls in flight
		// must be read for a slot to come back, waited for or not.
		c.ensureReader()
		select {
		case c.slots <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.done:
			return nil, c.err0()
		}
	}
	cl := &call{cn: c, id: c.nextID.Add(1), op: req.Op(), res: make(chan result, 2)}
	buf := proto.GetBuffer(sizeHint(req))
	defer proto.PutBuffer(buf)
	b, err := proto.AppendRequest(*buf, cl.id, c.traceparent(ctx), req)
	if err != nil {
		<-c.slots
		return nil, err
	}
	*buf = b
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		<-c.slots
		return nil, err
	}
	c.pending[cl.id] = cl
	c.mu.Unlock()
	c.wmu.Lock()
	_, err = c.nc.Write(b)
	c.wmu.Unlock()
	if err != nil {
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
			// The server closed the connection. If it said why first
			// (a frame with id 0: ETIMEDOUT for an idle connection,
			// ESHUTDOWN when it stops), that frame waits in the socket
			// ahead of the close: reading to cl's result (the end of the
			// connection) finds it, and the reason is the server's, not
			// this broken pipe.
			if _, err := c.await(ctx, cl); err != nil && ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, errUndelivered
		}
		// A frame written in part breaks the stream: the connection ends,
		// and cl gets its error like every call in flight (the first
		// reason recorded wins).
		c.fail(fmt.Errorf("write: %w", err))
	} else if !awaited {
		c.ensureReader()
	}
	return cl, nil
}

// sizeHint is the room req's frame needs, to pick its buffer's class.
func sizeHint(req proto.Request) int {
	const header = 16 + proto.TraceparentLen + 64
	switch r := req.(type) {
	case *proto.Write:
		return header + len(r.Data)
	case *proto.Put:
		return header + len(r.Path) + len(r.Data)
	}
	return proto.BufferSmall
}

// abandon gives up on cl: its response, if it has not come yet, is dropped
// by the reader; if it has, it is dropped here.
func (c *Client) abandon(cl *call) { cl.cn.abandon(cl) }

func (c *conn) abandon(cl *call) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[cl.id] == cl {
		cl.abandoned = true
		c.stopWaitingLocked(cl)
	}
	for {
		select {
		case r := <-cl.res:
			if r.lead {
				c.leaveLocked() // the read role, handed as the caller gave up: on to the next
			} else {
				proto.PutBuffer(r.buf)
			}
		default:
			return
		}
	}
}

// do sends req and waits for its reply. The reply's byte slices alias the
// returned buffer, which the caller gives back (proto.PutBuffer) when done with them.
func (c *Client) do(ctx context.Context, req proto.Request) (proto.Reply, *[]byte, error) {
	cl, err := c.sendAwaited(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	r, err := c.await(ctx, cl)
	return r.reply, r.buf, err
}

// doAttr is do for the ops that answer an Attr.
func (c *Client) doAttr(ctx context.Context, req proto.Request) (proto.Attr, error) {
	rep, buf, err := c.do(ctx, req)
	if err != nil {
		return proto.Attr{}, err
	}
	a := *rep.(*proto.Attr)
	proto.PutBuffer(buf)
	return a, nil
}

// doEmpty is do for the ops that answer only their status.
func (c *Client) doEmpty(ctx context.Context, req proto.Request) error {
	_, buf, err := c.do(ctx, req)
	proto.PutBuffer(buf)
	return err
}
