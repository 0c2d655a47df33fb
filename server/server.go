package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"ustore/proto"
	"ustore/store"
)

// Options configure a Server. Zero values mean the defaults.
type Options struct {
	// Socket is the path of the Unix socket to listen on (required).
	Socket string
	// SocketMode is the socket file's permission bits (default 0660).
	SocketMode os.FileMode
	// SocketGroup is the socket file's group, a name or a number (default
	// the process's group). It is not added to AllowGIDs: the file's
	// permissions and the allow-list are two separate gates.
	SocketGroup string
	// AllowUIDs are the peer uids allowed to use the server. nil means the
	// server's own uid and root; an empty non-nil slice allows no uid (only
	// AllowGIDs then).
	AllowUIDs []uint32
	// AllowGIDs are the peer gids allowed, matched against the peer's
	// primary gid and its supplementary groups (SO_PEERGROUPS). Default
	// none.
	AllowGIDs []uint32
	// InflightMax is the in-flight bound announced to each connection
	// (default and at most proto.InflightMax).
	InflightMax uint32
	// FrameSizeMax is the frame size announced (default and at most
	// proto.FrameSizeMax, at least proto.FrameSizeMin).
	FrameSizeMax uint32
	// ConnMax bounds the connections served at once (default 1024); past
	// it the server stops accepting until one ends.
	ConnMax int
	// ConnReserved of the ConnMax slots are kept for AdminUIDs (default
	// 8): other users together never hold more than ConnMax −
	// ConnReserved connections, so an administrator can always connect.
	ConnReserved int
	// ConnPerUIDMax bounds the connections of one uid that is not in
	// AdminUIDs (default 64); past it a connection is refused with EBUSY
	// at the hello, and past twice it closed at once (admit.go).
	ConnPerUIDMax int
	// AdminUIDs may use the reserved slots and are exempt from
	// ConnPerUIDMax. nil means root and the server's own uid; an empty
	// non-nil slice names none.
	AdminUIDs []uint32
	// InflightBytesMax bounds the bytes in flight across all connections:
	// request frame buffers held and response buffers not yet written
	// (default 256 MiB, at least 2 × proto.FrameSizeMax). Past it the
	// server stops reading requests until responses have gone out
	// (budget.go).
	InflightBytesMax int64
	// HandlesPerConnMax bounds the handles (open files: proto's open) one
	// connection holds at once (default 4096); past it open is EMFILE.
	HandlesPerConnMax int
	// IdleTimeout closes a connection that has no request in flight and
	// sends nothing for this long, with a connection-level ETIMEDOUT
	// (default 5 minutes; negative: never).
	IdleTimeout time.Duration
	// FrameTimeout bounds the reading of one request frame once its first
	// byte has arrived (default 10 s): a client that starts a frame and
	// stalls gets a connection-level ETIMEDOUT and is closed.
	FrameTimeout time.Duration
	// WriteTimeout bounds each write of responses to the socket (default
	// 10 s): a client that does not read its responses is closed, so it
	// holds neither the in-flight budget nor a graceful shutdown longer.
	// Each of these three is a lower bound, with at most a sixteenth more
	// (deadline.go).
	WriteTimeout time.Duration
	// LogInterval rate-limits the log lines a peer causes at will (a
	// refused or dropped connection): at most one per interval, with a
	// count of those suppressed (default 10 s).
	LogInterval time.Duration
	// Logger receives the server's structured logs (default slog.Default()).
	Logger *slog.Logger
}

func (o Options) withDefaults() (Options, error) {
	if o.Socket == "" {
		return o, errors.New("server: no socket path")
	}
	if o.SocketMode == 0 {
		o.SocketMode = 0o660
	}
	if o.SocketMode&^os.ModePerm != 0 {
		return o, fmt.Errorf("server: socket mode %v has bits other than permissions", o.SocketMode)
	}
	if o.AllowUIDs == nil {
		o.AllowUIDs = []uint32{uint32(os.Getuid())}
		if os.Getuid() != 0 {
			o.AllowUIDs = append(o.AllowUIDs, 0)
		}
	}
	if o.InflightMax == 0 {
		o.InflightMax = proto.InflightMax
	}
	if o.FrameSizeMax == 0 {
		o.FrameSizeMax = proto.FrameSizeMax
	}
	if err := (proto.Limits{FrameSizeMax: o.FrameSizeMax, InflightMax: o.InflightMax}).Validate(); err != nil {
		return o, fmt.Errorf("server: limits: %w", err)
	}
	if o.ConnMax == 0 {
		o.ConnMax = connMaxDefault
	}
	if o.ConnMax < 0 {
		return o, fmt.Errorf("server: ConnMax %d", o.ConnMax)
	}
	if o.ConnReserved == 0 {
		o.ConnReserved = min(connReservedDefault, o.ConnMax/2)
	}
	if o.ConnPerUIDMax == 0 {
		o.ConnPerUIDMax = connPerUIDMaxDefault
	}
	if o.ConnReserved < 0 || o.ConnReserved >= o.ConnMax || o.ConnPerUIDMax < 0 {
		return o, fmt.Errorf("server: ConnReserved %d and ConnPerUIDMax %d: want 0 ≤ reserved < ConnMax (%d) and per uid ≥ 1",
			o.ConnReserved, o.ConnPerUIDMax, o.ConnMax)
	}
	if o.AdminUIDs == nil {
		o.AdminUIDs = []uint32{0}
		if os.Getuid() != 0 {
			o.AdminUIDs = append(o.AdminUIDs, uint32(os.Getuid()))
		}
	}
	if o.InflightBytesMax == 0 {
		o.InflightBytesMax = inflightBytesMaxDefault
	}
	if o.InflightBytesMax < inflightBytesMin {
		return o, fmt.Errorf("server: InflightBytesMax %d is less than %d (two full frames: one request must always fit)",
			o.InflightBytesMax, inflightBytesMin)
	}
	if o.HandlesPerConnMax == 0 {
		o.HandlesPerConnMax = handlesPerConnMaxDefault
	}
	if o.HandlesPerConnMax < 0 {
		return o, fmt.Errorf("server: HandlesPerConnMax %d", o.HandlesPerConnMax)
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = idleTimeoutDefault
	}
	if o.FrameTimeout == 0 {
		o.FrameTimeout = frameTimeoutDefault
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = writeTimeoutDefault
	}
	if o.FrameTimeout < 0 || o.WriteTimeout < 0 {
		return o, fmt.Errorf("server: FrameTimeout %v and WriteTimeout %v must be positive", o.FrameTimeout, o.WriteTimeout)
	}
	if o.LogInterval <= 0 {
		o.LogInterval = logIntervalDefault
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

// Server serves one store on one Unix socket.
//
// Who touches what: the accept loop (Serve) adds connections to conns and
// connWG under mu while closing is false; beginShutdown sets closing under
// mu, so that no connection is added after it, then stops each one. Every
// connection's goroutine removes itself from conns and calls connWG.Done
// when all of its goroutines have ended. base is cancelled only to force a
// shutdown whose deadline passed.
type Server struct {
	st   *store.Store
	opts Options
	// handleSeq is the last open-file handle given, on any connection
	// (conn_handles.go): handles are unique across connections.
	handleSeq atomic.Uint64
	log       *slog.Logger
	limits    proto.Limits
	allow     allowList

	ln     *net.UnixListener
	sockID fileID

	base   context.Context // parent of every connection's context
	cancel context.CancelFunc

	connSem chan struct{} // a token per connection served: ConnMax
	connWG  sync.WaitGroup

	budget *budget // bytes in flight, all connections
	mem    *memRelease

	// refusedLog, limitLog and protoLog rate-limit the lines peers cause
	// at will: refusals, connection limits, protocol errors.
	refusedLog, limitLog, protoLog *logLimit

	mu          sync.Mutex
	conns       map[*conn]struct{}
	closing     bool
	admins      []uint32       // Options.AdminUIDs; tests change it
	uidConns    map[uint32]int // connections counted by admit, per uid
	unprivConns int            // their total

	quit     chan struct{} // closed when shutdown begins
	quitOnce sync.Once
	serving  atomic.Bool
	connIDs  atomic.Uint64

	// refuseTimeout is the const refuseTimeout (nanoseconds); tests
	// lengthen it while connections run.
	refuseTimeout atomic.Int64

	// testHook, set by tests before Serve, runs before each request is
	// dispatched: it can hold a request in flight. A read served from
	// memory on the reader (conn.readCached) has read its data already
	// when the hook runs, and holding it holds the connection's reader.
	testHook func(ctx context.Context, req proto.Request)
	// testFilter, set by tests (while serving: atomic), may refuse a
	// request: its error is the response, and the store is not called
	// (but for a read served from memory, which it has been: the error is
	// still the response).
	testFilter atomic.Pointer[func(ctx context.Context, req proto.Request) error]
}

// New creates the socket (Options.Socket, with its mode and group) and
// listens on it: when New returns, clients can connect, and their
// connections wait in the kernel's backlog until Serve accepts them. st must
// stay open until Serve or Shutdown has returned.
func New(st *store.Store, opts Options) (*Server, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	gid := -1
	if opts.SocketGroup != "" {
		g, err := LookupGroup(opts.SocketGroup)
		if err != nil {
			return nil, err
		}
		gid = int(g)
	}
	ln, id, err := listenUnix(opts.Socket, opts.SocketMode, gid, opts.Logger)
	if err != nil {
		return nil, err
	}
	base, cancel := context.WithCancel(context.Background())
	s := &Server{
		st: st, opts: opts, log: opts.Logger,
		limits: proto.Limits{FrameSizeMax: opts.FrameSizeMax, InflightMax: opts.InflightMax},
		allow:  allowList{uids: opts.AllowUIDs, gids: opts.AllowGIDs},
		ln:     ln, sockID: id, base: base, cancel: cancel,
		connSem:    make(chan struct{}, opts.ConnMax),
		budget:     newBudget(opts.InflightBytesMax),
		refusedLog: newLogLimit(opts.LogInterval),
		limitLog:   newLogLimit(opts.LogInterval),
		protoLog:   newLogLimit(opts.LogInterval),
		conns:      map[*conn]struct{}{},
		admins:     opts.AdminUIDs,
		uidConns:   map[uint32]int{},
		quit:       make(chan struct{}),
	}
	s.refuseTimeout.Store(int64(refuseTimeout))
	s.mem = newMemRelease(s.budget)
	s.log.Info("listening", "socket", opts.Socket, "mode", fmt.Sprintf("%#o", opts.SocketMode.Perm()),
		"handles_per_conn", opts.HandlesPerConnMax, "allow_uids", opts.AllowUIDs, "allow_gids", opts.AllowGIDs, "admin_uids", opts.AdminUIDs,
		"inflight_max", opts.InflightMax, "frame_size_max", opts.FrameSizeMax, "inflight_bytes_max", opts.InflightBytesMax,
		"conn_max", opts.ConnMax, "conn_reserved", opts.ConnReserved, "conn_per_uid_max", opts.ConnPerUIDMax,
		"idle_timeout", opts.IdleTimeout, "frame_timeout", opts.FrameTimeout, "write_timeout", opts.WriteTimeout)
	return s, nil
}

// Budget reports the bytes in flight against Options.InflightBytesMax.
func (s *Server) Budget() BudgetStats { return s.budget.stats() }

// Addr is the socket's path.
func (s *Server) Addr() string { return s.opts.Socket }

// Serve accepts connections and serves them until ctx is cancelled or
// Shutdown is called; either way it shuts down gracefully (see the package
// documentation) and returns nil once every connection has ended. It
// returns an error if accepting fails for good, after shutting down.
func (s *Server) Serve(ctx context.Context) error {
	if !s.serving.CompareAndSwap(false, true) {
		return errors.New("server: Serve called twice")
	}
	select {
	case <-s.quit:
		return ErrClosed
	default:
	}
	stop := context.AfterFunc(ctx, s.beginShutdown)
	defer stop()
	err := s.acceptLoop()
	s.beginShutdown()
	s.connWG.Wait()
	s.cancel()
	s.log.Info("server stopped")
	return err
}

func (s *Server) acceptLoop() error {
	backoff := time.Duration(0)
	for {
		select {
		case s.connSem <- struct{}{}:
		case <-s.quit:
			return nil
		}
		nc, err := s.ln.AcceptUnix()
		if err != nil {
			<-s.connSem
			select {
			case <-s.quit:
				return nil
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && !errors.Is(err, net.ErrClosed) {
				// EMFILE, ENFILE, ENOBUFS: wait and retry.
				backoff = min(max(2*backoff, 5*time.Millisecond), acceptBackoffMax)
				s.log.Warn("accept failed; retrying", "err", err, "backoff", backoff)
				select {
				case <-time.After(backoff):
				case <-s.quit:
					return nil
				}
				continue
			}
			s.log.Error("accept failed", "err", err)
			return fmt.Errorf("server: accept: %w", err)
		}
		backoff = 0
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			nc.Close()
			<-s.connSem
			return nil
		}
		c := newConn(s, nc, s.connIDs.Add(1))
		s.conns[c] = struct{}{}
		s.connWG.Add(1)
		s.mu.Unlock()
		go func() {
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				<-s.connSem
				s.connWG.Done()
			}()
			c.serve()
		}()
	}
}

// beginShutdown stops accepting (the listener is closed and the socket
// file removed, so new clients are refused at once) and tells every
// connection to stop reading.
func (s *Server) beginShutdown() {
	s.quitOnce.Do(func() {
		s.mu.Lock()
		s.closing = true
		conns := make([]*conn, 0, len(s.conns))
		for c := range s.conns {
			conns = append(conns, c)
		}
		s.mu.Unlock()
		close(s.quit)
		s.ln.Close()
		removeSocket(s.opts.Socket, s.sockID)
		s.log.Info("shutting down", "connections", len(conns))
		for _, c := range conns {
			c.stop()
		}
	})
}

// Shutdown shuts the server down gracefully: it stops accepting, lets the
// requests already read finish and their responses go out, then closes the
// connections. It returns when every connection has ended. If ctx expires
// first, the requests' contexts are cancelled and the connections closed;
// Shutdown then still waits for the store calls under way to return (they
// are not interruptible) and returns ctx's error. Either way the store may
// be closed after it returns.
func (s *Server) Shutdown(ctx context.Context) error {
	s.beginShutdown()
	done := make(chan struct{})
	go func() {
		s.connWG.Wait()
		close(done)
	}()
	select {
	case <-done:
		s.cancel()
		return nil
	case <-ctx.Done():
	}
	s.log.Warn("shutdown deadline passed; cancelling the requests under way", "err", ctx.Err())
	s.cancel()
	s.mu.Lock()
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	<-done
	return ctx.Err()
}
