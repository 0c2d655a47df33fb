package client

import (
	"bufio"
	"context"
	"errors"
	"io/fs"
	"net"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"ustore/proto"
)

// fakeServer is a server whose every move the test makes: it does the
// handshake and hands the connection over.
type fakeServer struct {
	t      *testing.T
	sock   string
	limits proto.Limits
	status proto.Status // of the hello reply
	conns  chan *fakeConn
}

type fakeConn struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func newFake(t *testing.T, limits proto.Limits) *fakeServer {
	t.Helper()
	return newFakeStatus(t, limits, proto.StatusOK)
}

func newFakeStatus(t *testing.T, limits proto.Limits, status proto.Status) *fakeServer {
	t.Helper()
	f := &fakeServer{t: t, sock: filepath.Join(t.TempDir(), "fake.sock"), limits: limits, status: status,
		conns: make(chan *fakeConn, 4)}
	ln, err := net.Listen("unix", f.sock)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { nc.Close() })
			fc := &fakeConn{t: t, nc: nc, br: bufio.NewReader(nc)}
			h, err := proto.ReadHello(fc.br)
			if err != nil {
				continue
			}
			rep := proto.HelloReply{Status: f.status}
			if f.status == proto.StatusOK {
				v, _ := proto.Negotiate(h)
				rep = proto.HelloReply{Status: proto.StatusOK, Version: v, Limits: f.limits}
			} else if f.status == 0xffff {
				continue // no reply at all
			}
			b, _ := proto.AppendHelloReply(nil, rep)
			nc.Write(b)
			f.conns <- fc
		}
	}()
	return f
}

func (f *fakeServer) accept() *fakeConn {
	f.t.Helper()
	select {
	case c := <-f.conns:
		return c
	case <-time.After(10 * time.Second):
		f.t.Fatal("no connection")
		return nil
	}
}

func (f *fakeServer) dial(opts Options) *Client {
	f.t.Helper()
	c, err := DialOptions(context.Background(), f.sock, opts)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { c.Close() })
	return c
}

// request reads one request frame and decodes its payload.
func (fc *fakeConn) request() (proto.Frame, proto.Request) {
	fc.t.Helper()
	fc.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	f, err := proto.ReadFrame(fc.br, proto.KindRequest, proto.FrameSizeMax, nil)
	if err != nil {
		fc.t.Fatalf("fake: read request: %v", err)
	}
	req, err := proto.DecodeRequest(f.Op, f.Payload)
	if err != nil {
		fc.t.Fatalf("fake: decode request: %v", err)
	}
	return f, req
}

// noRequest checks that no request arrives within d.
func (fc *fakeConn) noRequest(d time.Duration) {
	fc.t.Helper()
	fc.nc.SetReadDeadline(time.Now().Add(d))
	if _, err := fc.br.Peek(1); err == nil {
		fc.t.Fatal("fake: a request arrived")
	}
	fc.nc.SetReadDeadline(time.Time{})
}

func (fc *fakeConn) respond(id uint64, op proto.Op, s proto.Status, reply proto.Reply) {
	fc.t.Helper()
	msg := ""
	if s != proto.StatusOK {
		msg = "fake " + s.String()
	}
	b, err := proto.AppendResponse(nil, id, op, s, msg, reply)
	if err != nil {
		fc.t.Fatal(err)
	}
	fc.nc.Write(b)
}

func maxLimits() proto.Limits { return proto.MaxLimits() }

// TestClient_Cancel_ReturnsCtxErr: a call whose context ends returns its
// error; the late response is dropped and the connection goes on.
func TestClient_Cancel_ReturnsCtxErr(t *testing.T) {
	f := newFake(t, maxLimits())
	c := f.dial(Options{})
	fc := f.accept()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	errc := make(chan error, 1)
	go func() { _, err := c.Stat(ctx, 300); errc <- err }()
	fr, _ := fc.request()
	if err := <-errc; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timed-out call: %v", err)
	}
	fc.respond(fr.ID, proto.OpStat, proto.StatusOK, &proto.Attr{Ino: 300})
	// A cancelled context never sends.
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if _, err := c.Stat(cctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	go func() {
		fr, req := fc.request()
		fc.respond(fr.ID, proto.OpStat, proto.StatusOK, &proto.Attr{Ino: req.(*proto.Stat).Ino})
	}()
	if a, err := c.Stat(context.Background(), 301); err != nil || a.Ino != 301 {
		t.Fatalf("the next call: %+v %v", a, err)
	}
	if len(c.cur.Load().slots) != 0 {
		t.Fatalf("%d slots still taken", len(c.cur.Load().slots))
	}
}

// TestClient_OutOfOrder: responses in any order reach their own callers.
func TestClient_OutOfOrder(t *testing.T) {
	f := newFake(t, maxLimits())
	c := f.dial(Options{})
	fc := f.accept()
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := c.Stat(context.Background(), uint64(1000+i))
			if err == nil && a.Ino != uint64(1000+i) {
				err = errors.New("another call's answer")
			}
			errs <- err
		}()
	}
	var frames []proto.Frame
	var reqs []proto.Request
	for range n {
		fr, req := fc.request()
		frames, reqs = append(frames, fr), append(reqs, req)
	}
	for i := n - 1; i >= 0; i-- {
		fc.respond(frames[i].ID, proto.OpStat, proto.StatusOK, &proto.Attr{Ino: reqs[i].(*proto.Stat).Ino})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestClient_InflightBound: the client never has more requests in flight
// than the server announced.
func TestClient_InflightBound(t *testing.T) {
	f := newFake(t, proto.Limits{FrameSizeMax: proto.FrameSizeMax, InflightMax: 2})
	c := f.dial(Options{})
	fc := f.accept()
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Stat(context.Background(), uint64(i))
		}()
	}
	for answered := 0; answered < 5; {
		fr1, _ := fc.request()
		var frames = []proto.Frame{fr1}
		if answered < 4 {
			fr2, _ := fc.request()
			frames = append(frames, fr2)
		}
		fc.noRequest(50 * time.Millisecond)
		for _, fr := range frames {
			fc.respond(fr.ID, proto.OpStat, proto.StatusOK, &proto.Attr{})
			answered++
		}
	}
	wg.Wait()
}

// TestClient_BadResponses_EndConnection: a malformed response, one for an
// id not in flight, or a connection-level status fails every call in
// flight and every later one.
func TestClient_BadResponses_EndConnection(t *testing.T) {
	for _, tc := range []struct {
		name string
		send func(fc *fakeConn, id uint64)
		want error
	}{
		{"garbage", func(fc *fakeConn, _ uint64) { fc.nc.Write([]byte("GARBAGE GARBAGE GARBAGE")) }, proto.ErrMalformed},
		{"unknown id", func(fc *fakeConn, id uint64) { fc.respond(id+100, proto.OpStat, proto.StatusOK, &proto.Attr{}) }, proto.ErrMalformed},
		{"wrong op", func(fc *fakeConn, id uint64) { fc.respond(id, proto.OpLookup, proto.StatusOK, &proto.Attr{}) }, proto.ErrMalformed},
		{"shutdown", func(fc *fakeConn, _ uint64) { fc.respond(0, 0, proto.StatusShutdown, nil) }, syscall.ESHUTDOWN},
		{"closed", func(fc *fakeConn, _ uint64) { fc.nc.Close() }, ErrConnection},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, maxLimits())
			c := f.dial(Options{})
			fc := f.accept()
			errc := make(chan error, 2)
			for range 2 {
				go func() { _, err := c.Stat(context.Background(), 1); errc <- err }()
			}
			fr, _ := fc.request()
			fc.request()
			tc.send(fc, fr.ID)
			for range 2 {
				if err := <-errc; !errors.Is(err, tc.want) || !errors.Is(err, ErrConnection) {
					t.Fatalf("call in flight: %v, want %v", err, tc.want)
				}
			}
			if _, err := c.Stat(context.Background(), 1); !errors.Is(err, ErrConnection) {
				t.Fatalf("later call: %v", err)
			}
		})
	}
}

// TestClient_Traceparent_Sent: the hook's traceparent travels with each
// request; one that does not parse is left out.
func TestClient_Traceparent_Sent(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	type key struct{}
	f := newFake(t, maxLimits())
	c := f.dial(Options{Traceparent: func(ctx context.Context) string { s, _ := ctx.Value(key{}).(string); return s }})
	fc := f.accept()
	for _, sent := range []string{tp, "not a traceparent", ""} {
		go c.Sync(context.WithValue(context.Background(), key{}, sent))
		fr, _ := fc.request()
		want := sent
		if sent != tp {
			want = ""
		}
		if fr.Trace.String() != want {
			t.Errorf("sent %q: the frame carries %q", sent, fr.Trace.String())
		}
		fc.respond(fr.ID, proto.OpSync, proto.StatusOK, &proto.Empty{})
	}
}

// TestClient_Validation_Local: what the protocol cannot carry is refused
// before anything is sent.
func TestClient_Validation_Local(t *testing.T) {
	f := newFake(t, maxLimits())
	c := f.dial(Options{})
	fc := f.accept()
	ctx := context.Background()
	if _, err := c.Lookup(ctx, 256, strings.Repeat("n", 256)); !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Errorf("long name: %v", err)
	}
	if _, err := c.Resolve(ctx, strings.Repeat("/p", 2049)); !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Errorf("long path: %v", err)
	}
	if _, err := c.Mkdir(ctx, 256, "d", 0o40755); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("mode with a type: %v", err)
	}
	if _, err := c.ReadDir(ctx, 256, 0, 0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("readdir of 0: %v", err)
	}
	go c.Sync(ctx)
	if fr, _ := fc.request(); fr.Op != proto.OpSync {
		t.Fatalf("the first request on the wire is %v", fr.Op)
	} else {
		fc.respond(fr.ID, proto.OpSync, proto.StatusOK, &proto.Empty{})
	}
}

// TestClient_Dial_RefusedAndTimeout: a refusal at the handshake is its
// errno; a server that never answers is bounded by the dial's context.
func TestClient_Dial_RefusedAndTimeout(t *testing.T) {
	f := newFakeStatus(t, proto.Limits{}, proto.StatusAccess)
	if _, err := Dial(context.Background(), f.sock); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("refused: %v", err)
	}
	mute := newFakeStatus(t, proto.Limits{}, 0xffff)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := Dial(ctx, mute.sock); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("mute server: %v", err)
	}
	if _, err := Dial(context.Background(), filepath.Join(t.TempDir(), "none.sock")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no socket: %v", err)
	}
}

// TestClient_Close_NoLeak: Close fails the calls in flight, ends the
// reader, and later calls return ErrClosed.
func TestClient_Close_NoLeak(t *testing.T) {
	f := newFake(t, maxLimits())
	runtime.GC()
	base := runtime.NumGoroutine()
	c, err := Dial(context.Background(), f.sock)
	if err != nil {
		t.Fatal(err)
	}
	fc := f.accept()
	errc := make(chan error, 1)
	go func() { errc <- c.Sync(context.Background()) }()
	fc.request()
	c.Close()
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("call in flight at Close: %v", err)
	}
	if err := c.Sync(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("call after Close: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base+1 { // +1: the fake's accept loop
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines, started with %d", runtime.NumGoroutine(), base)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
