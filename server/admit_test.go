package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"ustore/client"
	"ustore/proto"
)

// helloReply sends a good hello on rc and reads the server's reply.
func (rc *rawConn) helloReply() proto.HelloReply {
	rc.t.Helper()
	rc.write(proto.AppendHello(nil, proto.ClientHello()))
	var b [proto.HelloReplySize]byte
	if _, err := io.ReadFull(rc.br, b[:]); err != nil {
		rc.t.Fatalf("hello reply: %v", err)
	}
	rep, err := proto.DecodeHelloReply(b[:])
	if err != nil {
		rc.t.Fatal(err)
	}
	return rep
}

// waitCounted waits until the server counts n connections of uid.
func (s *Server) waitCounted(t *testing.T, uid uint32, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		s.mu.Lock()
		got := s.uidConns[uid]
		s.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections of uid %d counted, want %d", got, uid, n)
		}
	}
}

// TestServer_ConnPerUID_Limit: a user (not an admin) past its connection
// limit is refused with EBUSY at the hello; past twice the limit (counting
// the refusals still reading their hello) it is closed at once. Its
// connections ending make room again.
func TestServer_ConnPerUID_Limit(t *testing.T) {
	st, _ := newTestStore(t)
	uid := uint32(os.Getuid())
	ts := startServer(t, st, Options{AdminUIDs: []uint32{}, ConnPerUIDMax: 2}, nil)
	ts.refuseTimeout.Store(int64(time.Minute)) // the silent refusals stay counted
	ctx := context.Background()
	c1, c2 := dial(t, ts.sock), dial(t, ts.sock)
	if _, err := client.Dial(ctx, ts.sock); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("third connection: %v, want EBUSY", err)
	}
	ts.waitCounted(t, uid, 2) // the refused one has ended
	// Two silent connections, refused but counted while their hello is
	// awaited; the fifth is closed without a reply.
	r3, r4 := dialRaw(t, ts.sock), dialRaw(t, ts.sock)
	ts.waitCounted(t, uid, 4)
	r5 := dialRaw(t, ts.sock)
	var b [1]byte
	if n, err := r5.br.Read(b[:]); err == nil {
		t.Fatalf("fifth connection read %d bytes, want it closed", n)
	}
	for _, rc := range []*rawConn{r3, r4} {
		if rep := rc.helloReply(); rep.Status != proto.StatusBusy {
			t.Fatalf("hello reply %+v, want EBUSY (status 18)", rep)
		}
		rc.expectClosed()
	}
	ts.waitCounted(t, uid, 2)
	c1.Close()
	ts.waitCounted(t, uid, 1)
	if _, err := dial(t, ts.sock).Stat(ctx, client.RootIno); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Stat(ctx, client.RootIno); err != nil {
		t.Fatal(err)
	}
}

// TestServer_ConnReserved_AdminGetsIn: with every slot that other users
// may take held (idle connections after their hello), a new user's
// connection is closed, and an admin still connects.
func TestServer_ConnReserved_AdminGetsIn(t *testing.T) {
	st, _ := newTestStore(t)
	uid := uint32(os.Getuid())
	ts := startServer(t, st, Options{AdminUIDs: []uint32{}, ConnMax: 6, ConnReserved: 2}, nil)
	ctx := context.Background()
	for range 4 {
		dial(t, ts.sock)
	}
	ts.waitCounted(t, uid, 4)
	if c, err := client.Dial(ctx, ts.sock); err == nil {
		c.Close()
		t.Fatal("a fifth user connection got one of the reserved slots")
	}
	ts.mu.Lock()
	ts.admins = []uint32{uid} // the same peer, now an admin
	ts.mu.Unlock()
	for range 2 {
		if _, err := dial(t, ts.sock).Stat(ctx, client.RootIno); err != nil {
			t.Fatalf("admin on a reserved slot: %v", err)
		}
	}
}

// TestServer_AllowList_RefusedStatus: the refusal is hello reply status 15
// (EACCES), as docs/PROTOCOL.md lists it.
func TestServer_AllowList_RefusedStatus(t *testing.T) {
	st, _ := newTestStore(t)
	ts := startServer(t, st, Options{AllowUIDs: []uint32{12345}}, nil)
	rc := dialRaw(t, ts.sock)
	if rep := rc.helloReply(); uint16(rep.Status) != 15 || rep.Version != 0 || rep.Limits != (proto.Limits{}) {
		t.Fatalf("hello reply %+v, want status 15 and nothing else", rep)
	}
	rc.expectClosed()
}

// lockedBuffer is a log sink for a server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServer_RefusedLog_RateLimited: a user refused in a loop writes one
// WARN line per interval, not one per attempt.
func TestServer_RefusedLog_RateLimited(t *testing.T) {
	st, _ := newTestStore(t)
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	ts := startServer(t, st, Options{AllowUIDs: []uint32{12345}, LogInterval: time.Hour, Logger: log}, nil)
	for range 30 {
		if _, err := client.Dial(context.Background(), ts.sock); !errors.Is(err, syscall.EACCES) {
			t.Fatalf("dial: %v, want EACCES", err)
		}
	}
	if n := strings.Count(logs.String(), "peer refused"); n != 1 {
		t.Fatalf("%d refusal lines for 30 refusals in one interval, want 1:\n%s", n, logs.String())
	}
}

// TestLogLimit_Allow: one line per interval; the next one says how many
// were held back.
func TestLogLimit_Allow(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newLogLimit(10 * time.Second)
	l.now = func() time.Time { return now }
	if ok, n := l.allow(); !ok || n != 0 {
		t.Fatalf("first: %v %d", ok, n)
	}
	for range 5 {
		now = now.Add(time.Second)
		if ok, _ := l.allow(); ok {
			t.Fatal("a second line within the interval")
		}
	}
	now = now.Add(5 * time.Second)
	if ok, n := l.allow(); !ok || n != 5 {
		t.Fatalf("after the interval: %v, %d suppressed, want 5", ok, n)
	}
	if ok, _ := l.allow(); ok {
		t.Fatal("a line right after")
	}
}
