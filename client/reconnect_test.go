package client_test

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"

	"ustore/client"
	"ustore/server"
)

// waitConnEnded waits for the server to close c's connection: an event
// that must happen (the server's idle timer), bounded only against a bug.
func waitConnEnded(t *testing.T, c *client.Client) error {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for c.Err() == nil {
		if time.Now().After(deadline) {
			t.Fatal("the server never closed the idle connection")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return c.Err()
}

// TestClient_IdleClose_Redials: after the server closes an idle connection
// (connection-level ETIMEDOUT), the next calls — many at once — dial again,
// once, and succeed; nothing is lost.
func TestClient_IdleClose_Redials(t *testing.T) {
	c, _, _ := serveWith(t, server.Options{IdleTimeout: 50 * time.Millisecond})
	ctx := context.Background()
	f, err := c.Create(ctx, client.RootIno, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(ctx, f.Ino, 0, []byte("kept")); err != nil {
		t.Fatal(err)
	}
	if err := waitConnEnded(t, c); !errors.Is(err, syscall.ETIMEDOUT) {
		t.Fatalf("connection ended with %v, want the idle ETIMEDOUT", err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			a, err := c.Stat(ctx, f.Ino)
			if err != nil {
				t.Errorf("stat after the idle close: %v", err)
				return
			}
			if a.Size != 4 {
				t.Errorf("size %d, want 4", a.Size)
			}
		})
	}
	wg.Wait()
	if n := c.Reconnects(); n != 1 {
		t.Errorf("%d reconnects for 8 calls after one idle close, want 1", n)
	}
	if err := c.Err(); err != nil {
		t.Errorf("Err after the reconnect: %v", err)
	}
	// And again: every idle close is followed by one redial.
	waitConnEnded(t, c)
	if _, err := c.Stat(ctx, f.Ino); err != nil {
		t.Fatal(err)
	}
	if n := c.Reconnects(); n != 2 {
		t.Errorf("%d reconnects after two idle closes, want 2", n)
	}
}

// TestClient_ShutdownClose_Final: a connection the server ended for any
// other reason (here its shutdown: ESHUTDOWN) is not redialed; calls get
// that reason.
func TestClient_ShutdownClose_Final(t *testing.T) {
	c, _, srv := serveWith(t, server.Options{})
	ctx := context.Background()
	if _, err := c.Stat(ctx, client.RootIno); err != nil {
		t.Fatal(err)
	}
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	waitConnEnded(t, c)
	_, err := c.Stat(ctx, client.RootIno)
	if !errors.Is(err, syscall.ESHUTDOWN) || !errors.Is(err, client.ErrConnection) {
		t.Errorf("stat after shutdown: %v, want the connection's ESHUTDOWN", err)
	}
	if n := c.Reconnects(); n != 0 {
		t.Errorf("%d reconnects after a shutdown, want 0", n)
	}
}
