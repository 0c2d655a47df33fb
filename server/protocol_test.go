package server

import (
	"context"
	"encoding/binary"
	"errors"
	"io/fs"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"ustore/client"
	"ustore/proto"
)

// TestServer_Malformed_ClosesOnlyThatConnection sends what breaks the
// protocol's rules, each on its own connection: the server answers
// EBADMSG (for the request's id when it could read one, 0 otherwise) and
// closes it, while a client on another connection keeps working.
func TestServer_Malformed_ClosesOnlyThatConnection(t *testing.T) {
	ts := newStoreServer(t)
	c := dial(t, ts.sock)
	ctx := context.Background()
	good := request(t, 7, &proto.Stat{Ino: client.RootIno})
	lookup := request(t, 9, &proto.Lookup{Dir: client.RootIno, Name: "abc"})
	overrun := append([]byte(nil), lookup...)
	overrun[16+8] = 200 // the name's length runs past the payload
	for _, tc := range []struct {
		name   string
		send   []byte
		wantID uint64
	}{
		{"unknown kind", header(16, 'X', proto.OpStat, 1), 0},
		{"response kind from a client", header(18, 'R', proto.OpStat, 1), 0},
		{"size under the header", header(8, 'Q', proto.OpStat, 1), 0},
		{"absurd size", header(0xfffffff0, 'Q', proto.OpStat, 1), 0},
		{"size just over the limit", header(proto.FrameSizeMax+1, 'Q', proto.OpWrite, 1), 0},
		{"request id 0", append(header(24, 'Q', proto.OpStat, 0), 0, 1, 0, 0, 0, 0, 0, 0), 0},
		{"unknown flag", func() []byte { b := append([]byte(nil), good...); b[6] = 2; return b }(), 0},
		{"name overruns its payload", overrun, 9},
		{"trailing bytes", append(func() []byte {
			b := request(t, 8, &proto.Stat{Ino: client.RootIno})
			binary.LittleEndian.PutUint32(b, uint32(len(b)+1))
			return b
		}(), 0), 8},
		{"bad bool", func() []byte {
			b := request(t, 11, &proto.Fsync{Ino: 300})
			b[len(b)-1] = 2
			return b
		}(), 11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc, _ := handshake(t, ts.sock)
			// A good request first: it is answered before the bad frame.
			rc.write(good)
			rc.write(tc.send)
			f := rc.read()
			if f.ID != 7 || f.Status != proto.StatusOK {
				t.Fatalf("the good request: %+v", f)
			}
			f = rc.read()
			if f.Status != proto.StatusBadMessage || f.ID != tc.wantID || f.Message == "" {
				t.Fatalf("got %+v, want EBADMSG for id %d", f, tc.wantID)
			}
			rc.expectClosed()
			if _, err := c.Stat(ctx, client.RootIno); err != nil {
				t.Fatalf("the other connection: %v", err)
			}
		})
	}
}

// TestServer_Truncated_ClosesConnection: a client that stops in the middle
// of a frame gets EBADMSG (if it still reads) and the connection is closed.
func TestServer_Truncated_ClosesConnection(t *testing.T) {
	ts := newStoreServer(t)
	rc, _ := handshake(t, ts.sock)
	b := request(t, 1, &proto.Lookup{Dir: client.RootIno, Name: "abcdef"})
	rc.write(b[:len(b)-3])
	rc.nc.CloseWrite()
	if f := rc.read(); f.Status != proto.StatusBadMessage || f.ID != 0 {
		t.Fatalf("got %+v, want a connection-level EBADMSG", f)
	}
	rc.expectClosed()
}

// TestServer_Handshake_Bad: a hello with a wrong magic, an empty version
// range or no common version is refused, with the status that says which,
// and the connection closed.
func TestServer_Handshake_Bad(t *testing.T) {
	ts := newStoreServer(t)
	for _, tc := range []struct {
		name  string
		hello []byte
		want  proto.Status
	}{
		{"bad magic", []byte("HTTP\x01\x00\x01\x00"), proto.StatusBadMessage},
		{"version 0", proto.AppendHello(nil, proto.Hello{VersionMin: 0, VersionMax: 1})[:8], proto.StatusBadMessage},
		{"empty range", []byte{'U', 'S', 'T', 'P', 3, 0, 2, 0}, proto.StatusBadMessage},
		{"only newer versions", proto.AppendHello(nil, proto.Hello{VersionMin: 2, VersionMax: 9}), proto.StatusVersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := dialRaw(t, ts.sock)
			rc.write(tc.hello)
			var b [proto.HelloReplySize]byte
			if _, err := rc.br.Read(b[:]); err != nil {
				t.Fatal(err)
			}
			rep, err := proto.DecodeHelloReply(b[:])
			if err != nil || rep.Status != tc.want {
				t.Fatalf("reply %+v %v, want %v", rep, err, tc.want)
			}
			rc.expectClosed()
		})
	}
	// A client that closes before its hello is no error.
	rc := dialRaw(t, ts.sock)
	rc.nc.Close()
	if _, err := dial(t, ts.sock).Stat(context.Background(), client.RootIno); err != nil {
		t.Fatal(err)
	}
}

// TestServer_AbsurdLength_AllocatesNothing: a frame whose size is over the
// limit is refused before a buffer is made for it.
func TestServer_AbsurdLength_AllocatesNothing(t *testing.T) {
	ts := newStoreServer(t)
	for _, size := range []uint32{0xffffffff, proto.FrameSizeMax + 1} {
		rc, _ := handshake(t, ts.sock)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		rc.write(header(size, 'Q', proto.OpWrite, 1))
		if f := rc.read(); f.Status != proto.StatusBadMessage {
			t.Fatalf("size %d: %+v", size, f)
		}
		rc.expectClosed()
		runtime.ReadMemStats(&after)
		if d := after.TotalAlloc - before.TotalAlloc; d > 256<<10 {
			t.Errorf("size %d: the server allocated %d bytes while refusing it", size, d)
		}
	}
}

// TestServer_UnknownOp_ConnectionGoesOn: an op this version does not know
// is answered ENOSYS, and the next request on the connection is served.
func TestServer_UnknownOp_ConnectionGoesOn(t *testing.T) {
	ts := newStoreServer(t)
	rc, _ := handshake(t, ts.sock)
	b := header(16+5, 'Q', 200, 3)
	rc.write(append(b, 1, 2, 3, 4, 5))
	rc.write(request(t, 4, &proto.Stat{Ino: client.RootIno}))
	if f := rc.read(); f.ID != 3 || f.Status != proto.StatusNoSys || f.Op != 200 {
		t.Fatalf("unknown op: %+v", f)
	}
	if f := rc.read(); f.ID != 4 || f.Status != proto.StatusOK {
		t.Fatalf("the request after it: %+v", f)
	}
}

// TestServer_Pipelining_OutOfOrder holds the first request of a pipeline in
// the server: the ones sent after it are answered first, each under its
// own id, and a reused id while in flight is a protocol error.
func TestServer_Pipelining_OutOfOrder(t *testing.T) {
	st, _ := newTestStore(t)
	// A read runs on a worker (a stat would run on the reader, and hold
	// it: conn_inline.go).
	g := newGate(1, func(r proto.Request) bool { s, ok := r.(*proto.Read); return ok && s.Ino == 1<<40 })
	ts := startServer(t, st, Options{}, g.hook)
	rc, _ := handshake(t, ts.sock)
	rc.write(request(t, 100, &proto.Read{Ino: 1 << 40, Len: 1}))
	g.wait(t, 1)
	for id := uint64(1); id <= 20; id++ {
		rc.write(request(t, id, &proto.Stat{Ino: client.RootIno}))
	}
	seen := map[uint64]bool{}
	for range 20 {
		f := rc.read()
		if f.Status != proto.StatusOK || f.ID == 100 || seen[f.ID] {
			t.Fatalf("response %+v", f)
		}
		seen[f.ID] = true
	}
	close(g.release)
	if f := rc.read(); f.ID != 100 || f.Status != proto.StatusNotExist {
		t.Fatalf("the held request: %+v", f)
	}

	// Reusing an id in flight breaks the connection.
	g2 := newGate(1, func(r proto.Request) bool { _, ok := r.(*proto.Sync); return ok })
	ts.testHook = nil
	st2, _ := newTestStore(t)
	ts2 := startServer(t, st2, Options{}, g2.hook)
	rc2, _ := handshake(t, ts2.sock)
	rc2.write(request(t, 5, &proto.Sync{}))
	g2.wait(t, 1)
	rc2.write(request(t, 5, &proto.Stat{Ino: client.RootIno}))
	// Release 5 only once the reader has read the second frame.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		ts2.mu.Lock()
		var read uint64
		for c := range ts2.conns {
			read = c.requests.Load()
		}
		ts2.mu.Unlock()
		if read == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server did not read the second frame")
		}
	}
	time.Sleep(10 * time.Millisecond) // from its count to its check of the id
	close(g2.release)
	f1, f2 := rc2.read(), rc2.read()
	if f1.ID != 5 || f1.Status != proto.StatusOK || f2.ID != 0 || f2.Status != proto.StatusBadMessage {
		t.Fatalf("reused id: %+v then %+v", f1, f2)
	}
	rc2.expectClosed()
}

// TestServer_Pipelining_ManyConcurrentCalls: one client, many goroutines,
// every call gets its own answer.
func TestServer_Pipelining_ManyConcurrentCalls(t *testing.T) {
	ts := newStoreServer(t)
	c := dial(t, ts.sock)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := "g" + string(rune('A'+g%26)) + string(rune('a'+g/26))
			a, err := c.Create(ctx, client.RootIno, name, 0o644)
			if err != nil {
				select {
				case errs <- err:
				default:
				}
				return
			}
			for i := range 30 {
				want := []byte{byte(g), byte(i)}
				if _, err := c.Write(ctx, a.Ino, uint64(2*i), want); err != nil {
					errs <- err
					return
				}
				got := make([]byte, 2)
				if n, err := c.Read(ctx, a.Ino, uint64(2*i), got); err != nil || n != 2 || got[0] != want[0] || got[1] != want[1] {
					select {
					case errs <- errors.New("a read got another call's answer"):
					default:
					}
					return
				}
				if s, err := c.Stat(ctx, a.Ino); err != nil || s.Ino != a.Ino {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

// TestServer_Backpressure_StopsReading: with all of a connection's
// in-flight slots taken, the server reads no further request — they wait
// in the socket — until a response has gone out.
func TestServer_Backpressure_StopsReading(t *testing.T) {
	st, _ := newTestStore(t)
	g := newGate(64, nil)
	ts := startServer(t, st, Options{InflightMax: 4}, g.hook)
	rc, limits := handshake(t, ts.sock)
	if limits.InflightMax != 4 {
		t.Fatalf("limits %+v", limits)
	}
	// Readdirs run on workers, so that the gate holds four at once.
	for id := uint64(1); id <= 10; id++ {
		rc.write(request(t, id, &proto.ReadDir{Dir: client.RootIno, Max: 1}))
	}
	g.wait(t, 4)
	select {
	case r := <-g.entered:
		t.Fatalf("a fifth request (%v) was read with 4 in flight", r.Op())
	case <-time.After(100 * time.Millisecond):
	}
	close(g.release)
	seen := map[uint64]bool{}
	for range 10 {
		f := rc.read()
		if f.Status != proto.StatusOK || seen[f.ID] {
			t.Fatalf("%+v", f)
		}
		seen[f.ID] = true
	}
}

// TestServer_AllowList_Refused: a peer not on the allow-list (root, when
// only uid 12345 is allowed) gets EACCES at the handshake; one whose gid
// is allowed gets in.
func TestServer_AllowList_Refused(t *testing.T) {
	st, _ := newTestStore(t)
	ts := startServer(t, st, Options{AllowUIDs: []uint32{12345}}, nil)
	_, err := client.Dial(context.Background(), ts.sock)
	if !errors.Is(err, syscall.EACCES) || !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("dial: %v, want EACCES", err)
	}
	ts2 := startServer(t, st, Options{AllowUIDs: []uint32{}, AllowGIDs: []uint32{uint32(syscall.Getgid())}}, nil)
	if _, err := dial(t, ts2.sock).Stat(context.Background(), client.RootIno); err != nil {
		t.Fatal(err)
	}
	// The default: the server's own uid (and root).
	ts3 := startServer(t, st, Options{}, nil)
	if _, err := dial(t, ts3.sock).Stat(context.Background(), client.RootIno); err != nil {
		t.Fatal(err)
	}
}

// TestServer_Traceparent_InRequestContext: the traceparent a request
// carries is in its context on the server.
func TestServer_Traceparent_InRequestContext(t *testing.T) {
	st, _ := newTestStore(t)
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	got := make(chan string, 2)
	type key struct{}
	ts := startServer(t, st, Options{}, func(ctx context.Context, _ proto.Request) { got <- Traceparent(ctx) })
	c, err := client.DialOptions(context.Background(), ts.sock, client.Options{Traceparent: func(ctx context.Context) string {
		s, _ := ctx.Value(key{}).(string)
		return s
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.WithValue(context.Background(), key{}, tp)
	if _, err := c.Stat(ctx, client.RootIno); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != tp {
		t.Fatalf("server saw %q, want %q", s, tp)
	}
	if _, err := c.Stat(context.Background(), client.RootIno); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "" {
		t.Fatalf("a request without a traceparent: %q", s)
	}
}

// TestServer_OverLimit_EINVAL_ConnectionGoesOn: a read longer than
// IOSizeMax (2 MiB, and the largest u32) and a write with more data than
// IOSizeMax in a frame within the limit are answered EINVAL, as
// docs/PROTOCOL.md says, and the connection goes on.
func TestServer_OverLimit_EINVAL_ConnectionGoesOn(t *testing.T) {
	ts := newStoreServer(t)
	rc, _ := handshake(t, ts.sock)
	readOf := func(id uint64, n uint32) []byte {
		b := request(t, id, &proto.Read{Ino: client.RootIno, Len: 1})
		binary.LittleEndian.PutUint32(b[len(b)-4:], n)
		return b
	}
	write := request(t, 3, &proto.Write{Ino: client.RootIno, Data: make([]byte, proto.IOSizeMax)})
	write = append(write, 0) // one byte over IOSizeMax, the frame within its limit
	binary.LittleEndian.PutUint32(write, uint32(len(write)))
	rc.write(readOf(1, 2<<20))
	rc.write(readOf(2, 1<<32-1))
	rc.write(write)
	rc.write(request(t, 4, &proto.Stat{Ino: client.RootIno}))
	for id := uint64(1); id <= 3; id++ {
		if f := rc.read(); f.ID != id || f.Status != proto.StatusInvalid {
			t.Fatalf("request %d: %+v, want EINVAL", id, f)
		}
	}
	if f := rc.read(); f.ID != 4 || f.Status != proto.StatusOK {
		t.Fatalf("the request after them: %+v", f)
	}
}

// TestServer_Traceparent_MalformedIgnored: a request whose traceparent is
// not a valid W3C one (uppercase hex) is served, without a trace, as
// docs/TRACING.md promises.
func TestServer_Traceparent_MalformedIgnored(t *testing.T) {
	st, _ := newTestStore(t)
	got := make(chan string, 1)
	ts := startServer(t, st, Options{}, func(ctx context.Context, _ proto.Request) { got <- Traceparent(ctx) })
	rc, _ := handshake(t, ts.sock)
	tp, _ := proto.ParseTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	b := request(t, 1, &proto.Stat{Ino: client.RootIno})
	b, _ = proto.AppendRequest(b[:0], 1, tp, &proto.Stat{Ino: client.RootIno})
	copy(b[16:16+proto.TraceparentLen], strings.ToUpper(tp.String()))
	rc.write(b)
	if f := rc.read(); f.ID != 1 || f.Status != proto.StatusOK {
		t.Fatalf("%+v, want OK", f)
	}
	if s := <-got; s != "" {
		t.Fatalf("server saw traceparent %q, want none", s)
	}
}
