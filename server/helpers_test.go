package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"ustore/client"
	"ustore/dev/memdev"
	"ustore/proto"
	"ustore/store"
)

// testLogger keeps tests quiet; failures are reported by the tests.
var testLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// newTestStore formats a 256 MiB memdev and opens a store on it. The store
// is synced, checked (fsck) and closed at the end of the test, after the
// server's cleanup (cleanups run last-in first-out).
func newTestStore(t testing.TB) (*store.Store, *memdev.Device) {
	t.Helper()
	d := memdev.New(256 << 20)
	if err := store.Mkfs(d, store.MkfsOptions{}); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(d, store.Options{Logger: testLogger, DirtyBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		if err := st.Sync(ctx); err != nil {
			t.Errorf("sync: %v", err)
		}
		if err := st.Check(); err != nil {
			t.Errorf("fsck: %v", err)
		}
		if err := st.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return st, d
}

// testServer is a served store.
type testServer struct {
	*Server
	st     *store.Store
	sock   string
	served chan error
}

// startServer serves st on a socket in a temporary directory until the end
// of the test. hook, if not nil, runs before each request.
func startServer(t testing.TB, st *store.Store, opts Options, hook func(context.Context, proto.Request)) *testServer {
	t.Helper()
	if opts.Socket == "" {
		opts.Socket = filepath.Join(t.TempDir(), "s.sock")
	}
	if opts.Logger == nil {
		opts.Logger = testLogger
	}
	srv, err := New(st, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.testHook = hook
	ts := &testServer{Server: srv, st: st, sock: opts.Socket, served: make(chan error, 1)}
	go func() { ts.served <- srv.Serve(context.Background()) }()
	t.Cleanup(func() { ts.stop(t) })
	return ts
}

// stop shuts the server down and waits for Serve to return.
func (ts *testServer) stop(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ts.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	select {
	case err := <-ts.served:
		// ErrClosed: the server was shut down before Serve even started.
		if err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("serve: %v", err)
		}
		ts.served <- nil // for a second stop
	case <-ctx.Done():
		t.Error("Serve did not return")
	}
}

// newStoreServer is newTestStore and startServer with the defaults.
func newStoreServer(t testing.TB) *testServer {
	st, _ := newTestStore(t)
	return startServer(t, st, Options{}, nil)
}

func dial(t testing.TB, sock string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// rawConn is a connection that speaks the protocol by hand, to send what
// the client never would.
type rawConn struct {
	t  testing.TB
	nc *net.UnixConn
	br *bufio.Reader
}

func dialRaw(t testing.TB, sock string) *rawConn {
	t.Helper()
	nc, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawConn{t: t, nc: nc.(*net.UnixConn), br: bufio.NewReader(nc)}
}

// handshake dials and does a good handshake.
func handshake(t testing.TB, sock string) (*rawConn, proto.Limits) {
	t.Helper()
	rc := dialRaw(t, sock)
	rc.write(proto.AppendHello(nil, proto.ClientHello()))
	rep, err := proto.ReadHelloReply(rc.br, proto.ClientHello())
	if err != nil {
		t.Fatal(err)
	}
	return rc, rep.Limits
}

func (rc *rawConn) write(b []byte) {
	rc.t.Helper()
	if _, err := rc.nc.Write(b); err != nil {
		rc.t.Fatal(err)
	}
}

// request encodes a request frame.
func request(t testing.TB, id uint64, req proto.Request) []byte {
	t.Helper()
	b, err := proto.AppendRequest(nil, id, proto.Traceparent{}, req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// read reads one response frame.
func (rc *rawConn) read() proto.Frame {
	rc.t.Helper()
	f, err := proto.ReadFrame(rc.br, proto.KindResponse, proto.FrameSizeMax, nil)
	if err != nil {
		rc.t.Fatalf("read response: %v", err)
	}
	return f
}

// expectClosed checks that the server closed the connection: a read ends
// (EOF, or a reset if it left bytes unread).
func (rc *rawConn) expectClosed() {
	rc.t.Helper()
	rc.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b [1]byte
	if n, err := rc.br.Read(b[:]); err == nil {
		rc.t.Fatalf("connection still open: read %d bytes", n)
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		rc.t.Fatal("connection still open: read timed out")
	}
}

// header is a request frame header with the given size, kind and op.
func header(size uint32, kind byte, op proto.Op, id uint64) []byte {
	b := binary.LittleEndian.AppendUint32(nil, size)
	b = append(b, kind, byte(op), 0, 0)
	return binary.LittleEndian.AppendUint64(b, id)
}

// settle waits until the goroutine count falls to at most want, or fails.
func settle(t testing.TB, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= want {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines, want at most %d:\n%s", n, want, buf)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// gate holds requests in the server's test hook until released.
type gate struct {
	entered chan proto.Request
	release chan struct{}
	match   func(proto.Request) bool
}

func newGate(capacity int, match func(proto.Request) bool) *gate {
	return &gate{entered: make(chan proto.Request, capacity), release: make(chan struct{}), match: match}
}

func (g *gate) hook(ctx context.Context, req proto.Request) {
	if g.match != nil && !g.match(req) {
		return
	}
	g.entered <- req
	<-g.release
}

// wait waits for n requests to enter the gate.
func (g *gate) wait(t testing.TB, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case <-g.entered:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d requests entered the gate", i, n)
		}
	}
}
