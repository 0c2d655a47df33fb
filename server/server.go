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
	st     *store.Store
	opts   Options
	log    *slog.Logger
	limits proto.Limits
	allow  allowList

	ln     *net.UnixListener
	sockID fileID

	base   context.Context // parent of every connection's context
	cancel context.CancelFunc

	connSem chan struct{} // a token per connection served: ConnMax
	connWG  sync.WaitGroup

	mu      sync.Mutex
	conns   map[*conn]struct{}
	closing bool

	quit     chan struct{} // closed when shutdown begins
	quitOnce sync.Once
	serving  atomic.Bool
	connIDs  atomic.Uint64

	// testHook, set by tests before Serve, runs before each request is
	// dispatched: it can hold a request in flight.
	testHook func(ctx context.Context, req proto.Request)
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
		connSem: make(chan struct{}, opts.ConnMax),
		conns:   map[*conn]struct{}{},
		quit:    make(chan struct{}),
	}
	s.log.Info("listening", "socket", opts.Socket, "mode", fmt.Sprintf("%#o", opts.SocketMode.Perm()),
		"allow_uids", opts.AllowUIDs, "allow_gids", opts.AllowGIDs,
		"inflight_max", opts.InflightMax, "frame_size_max", opts.FrameSizeMax)
	return s, nil
}

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
