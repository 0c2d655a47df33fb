package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"ustore/client"
	"ustore/proto"
)

// TestServer_IdleTimeout_Closes: a connection that sends nothing after its
// hello, with nothing in flight, is closed after the idle timeout with a
// connection-level ETIMEDOUT; one with a request in flight is not idle.
func TestServer_IdleTimeout_Closes(t *testing.T) {
	st, _ := newTestStore(t)
	g := newGate(1, func(r proto.Request) bool { _, ok := r.(*proto.Sync); return ok })
	ts := startServer(t, st, Options{IdleTimeout: 100 * time.Millisecond}, g.hook)

	rc, _ := handshake(t, ts.sock)
	if f := rc.read(); f.ID != 0 || f.Status != proto.StatusTimedOut {
		t.Fatalf("idle connection: %+v, want a connection-level ETIMEDOUT", f)
	}
	rc.expectClosed()

	// A request held for five idle timeouts: the connection is not idle;
	// it serves a request sent meanwhile, then answers the held one.
	busy, _ := handshake(t, ts.sock)
	busy.write(request(t, 1, &proto.Sync{}))
	g.wait(t, 1)
	time.Sleep(500 * time.Millisecond)
	busy.write(request(t, 2, &proto.Stat{Ino: client.RootIno}))
	if f := busy.read(); f.ID != 2 || f.Status != proto.StatusOK {
		t.Fatalf("the request sent while one was held: %+v", f)
	}
	close(g.release)
	if f := busy.read(); f.ID != 1 || f.Status != proto.StatusOK {
		t.Fatalf("the held request: %+v", f)
	}
}

// TestServer_FrameTimeout_Closes: a client that starts a frame and stalls
// is closed after the frame timeout with a connection-level ETIMEDOUT,
// and its half frame is never served.
func TestServer_FrameTimeout_Closes(t *testing.T) {
	st, _ := newTestStore(t)
	ts := startServer(t, st, Options{FrameTimeout: 100 * time.Millisecond}, nil)
	for _, cut := range []int{3, 10, 30} { // in the size, in the header, in the payload
		rc, _ := handshake(t, ts.sock)
		b := request(t, 1, &proto.Lookup{Dir: client.RootIno, Name: "a-name-long-enough"})
		rc.write(b[:cut])
		if f := rc.read(); f.ID != 0 || f.Status != proto.StatusTimedOut {
			t.Fatalf("cut at %d: %+v, want a connection-level ETIMEDOUT", cut, f)
		}
		rc.expectClosed()
	}
	if _, err := dial(t, ts.sock).Stat(context.Background(), client.RootIno); err != nil {
		t.Fatal(err)
	}
}

// TestServer_WriteTimeout_ShutdownNotHeld: a client that pipelines large
// reads and never reads the responses cannot hold a graceful shutdown: its
// writes time out, it is closed, and Shutdown returns without its
// deadline passing.
func TestServer_WriteTimeout_ShutdownNotHeld(t *testing.T) {
	st, _ := newTestStore(t)
	ts := startServer(t, st, Options{WriteTimeout: 100 * time.Millisecond}, nil)
	ctx := context.Background()
	c := dial(t, ts.sock)
	a, err := c.Create(ctx, client.RootIno, "big", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(ctx, a.Ino, 0, make([]byte, proto.IOSizeMax)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	rc, _ := handshake(t, ts.sock)
	var b []byte
	for id := uint64(1); id <= 16; id++ {
		b = append(b, request(t, id, &proto.Read{Ino: a.Ino, Len: proto.IOSizeMax})...)
	}
	rc.write(b)
	// Wait until responses are stuck: more than the socket can take.
	for deadline := time.Now().Add(10 * time.Second); ts.Budget().Bytes < 4<<20; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("responses not under way: %+v", ts.Budget())
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := ts.Shutdown(sctx); err != nil {
		t.Fatalf("shutdown held by a client that does not read: %v after %v", err, time.Since(start))
	}
	if s := ts.Budget(); s.Bytes != 0 {
		t.Fatalf("budget not given back: %+v", s)
	}
}

// TestServer_Shutdown_AbortsBudgetWait: a reader waiting for the budget
// stops at a shutdown (the request it waited to read was never read).
func TestServer_Shutdown_AbortsBudgetWait(t *testing.T) {
	st, _ := newTestStore(t)
	g := newGate(8, nil)
	ts := startServer(t, st, Options{InflightBytesMax: inflightBytesMin}, g.hook)
	rc, _ := handshake(t, ts.sock)
	// Each readdir takes a full frame for its reply: two fill the budget.
	for id := uint64(1); id <= 3; id++ {
		rc.write(request(t, id, &proto.ReadDir{Dir: client.RootIno, Max: proto.ReadDirEntriesMax}))
	}
	g.wait(t, 2)
	for deadline := time.Now().Add(10 * time.Second); ts.Budget().Waiting == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the third request does not wait: %+v", ts.Budget())
		}
	}
	shut := make(chan error, 1)
	go func() { shut <- ts.Shutdown(context.Background()) }()
	// The waiting reader gives up before anything is given back.
	for deadline := time.Now().Add(10 * time.Second); ts.Budget().Waiting != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the reader still waits for the budget: %+v", ts.Budget())
		}
	}
	close(g.release)
	for range 2 {
		if f := rc.read(); f.Status != proto.StatusOK {
			t.Fatalf("%+v", f)
		}
	}
	if f := rc.read(); f.ID != 0 || f.Status != proto.StatusShutdown {
		t.Fatalf("%+v, want ESHUTDOWN", f)
	}
	if err := <-shut; err != nil && !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
}
