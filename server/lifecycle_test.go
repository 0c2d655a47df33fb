package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"ustore/client"
	"ustore/dev/memdev"
	"ustore/proto"
	"ustore/store"
)

// TestServer_Shutdown_FinishesInflight: a shutdown waits for the requests
// already read, answers them, then ends the connection with ESHUTDOWN;
// Serve returns, the socket is gone, and what was answered is in the store
// once it is closed.
func TestServer_Shutdown_FinishesInflight(t *testing.T) {
	d := memdev.New(256 << 20)
	if err := store.Mkfs(d, store.MkfsOptions{}); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(d, store.Options{Logger: testLogger})
	if err != nil {
		t.Fatal(err)
	}
	g := newGate(8, func(r proto.Request) bool { _, ok := r.(*proto.Write); return ok })
	ts := startServer(t, st, Options{}, g.hook)
	c := dial(t, ts.sock)
	ctx := context.Background()
	f, err := c.Create(ctx, client.RootIno, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]error, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, results[i] = c.Write(ctx, f.Ino, uint64(i*10), []byte(fmt.Sprintf("write %d", i)))
		}()
	}
	g.wait(t, 4)
	shut := make(chan error, 1)
	go func() { shut <- ts.Shutdown(context.Background()) }()
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) with requests in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(ts.sock); errors.Is(err, os.ErrNotExist) {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the socket is still there during shutdown: %v", err)
		}
	}
	if _, err := client.Dial(ctx, ts.sock); err == nil {
		t.Error("a new client got in during shutdown")
	}
	close(g.release)
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, err := range results {
		if err != nil {
			t.Errorf("write %d: %v", i, err)
		}
	}
	if err := <-ts.served; err != nil {
		t.Fatal(err)
	}
	ts.served <- nil
	// The connection ended with ESHUTDOWN.
	if _, err := c.Stat(ctx, client.RootIno); !errors.Is(err, syscall.ESHUTDOWN) {
		t.Errorf("a call after shutdown: %v, want ESHUTDOWN", err)
	}
	// Close the store (it commits) and mount what is on the device.
	if err := st.Close(ctx); err != nil {
		t.Fatal(err)
	}
	st2, err := store.Open(d.Crash(memdev.KeepNone()), store.Options{Logger: testLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close(ctx)
	if err := st2.Check(); err != nil {
		t.Fatal(err)
	}
	got, err := st2.Get("/f")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if want := fmt.Sprintf("write %d", i); string(got[i*10:i*10+len(want)]) != want {
			t.Errorf("after the restart, write %d is %q", i, got[i*10:i*10+len(want)])
		}
	}
}

// TestServer_Shutdown_Deadline: when the deadline passes, the requests'
// contexts are cancelled and Shutdown still waits for the store calls.
func TestServer_Shutdown_Deadline(t *testing.T) {
	st, _ := newTestStore(t)
	entered := make(chan struct{})
	cancelled := make(chan struct{})
	ts := startServer(t, st, Options{}, func(ctx context.Context, r proto.Request) {
		if _, ok := r.(*proto.Sync); ok {
			close(entered)
			<-ctx.Done() // a store call that ends only when cancelled
			close(cancelled)
		}
	})
	c := dial(t, ts.sock)
	errc := make(chan error, 1)
	go func() { errc <- c.Sync(context.Background()) }()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := ts.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("shutdown: %v", err)
	}
	select {
	case <-cancelled:
	default:
		t.Fatal("Shutdown returned before the request under way did")
	}
	// The sync may have been answered (its store call returned before the
	// socket closed) or not: either way the call returns.
	<-errc
}

// TestServer_DisconnectMidRequest_NoLeak: clients that vanish while their
// requests run leave no goroutine behind.
func TestServer_DisconnectMidRequest_NoLeak(t *testing.T) {
	st, _ := newTestStore(t)
	g := newGate(64, func(r proto.Request) bool { _, ok := r.(*proto.Write); return ok })
	ts := startServer(t, st, Options{}, g.hook)
	ctx := context.Background()
	c0 := dial(t, ts.sock)
	f, err := c0.Create(ctx, client.RootIno, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	base := runtime.NumGoroutine()
	for range 3 {
		var clients []*client.Client
		for range 4 {
			c, err := client.Dial(ctx, ts.sock)
			if err != nil {
				t.Fatal(err)
			}
			clients = append(clients, c)
			for i := range 4 {
				go c.Write(ctx, f.Ino, uint64(i), []byte("x"))
			}
			// A raw client that leaves in the middle of a frame.
			rc, _ := handshake(t, ts.sock)
			b := request(t, 1, &proto.Write{Ino: f.Ino, Data: make([]byte, 100000)})
			rc.write(b[:50000])
			rc.nc.Close()
		}
		g.wait(t, 16)
		for _, c := range clients {
			c.Close()
		}
		for range 16 {
			g.release <- struct{}{}
		}
	}
	// Every connection but c0's has ended, and nothing is left of them.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ts.mu.Lock()
		n := len(ts.conns)
		ts.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still open", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	settle(t, base)
	if _, err := c0.Stat(ctx, f.Ino); err != nil {
		t.Fatal(err)
	}
}

// TestServer_ManyClients_Fsck: 64 clients with pipelined requests on each,
// then the store is synced and passes fsck (newTestStore's cleanup).
func TestServer_ManyClients_Fsck(t *testing.T) {
	ts := newStoreServer(t)
	ctx := context.Background()
	const clients, workers, ops = 64, 4, 12
	var wg sync.WaitGroup
	errs := make(chan error, clients*workers)
	for ci := range clients {
		c := dial(t, ts.sock)
		dir, err := c.Mkdir(ctx, client.RootIno, fmt.Sprintf("c%d", ci), 0o755)
		if err != nil {
			t.Fatal(err)
		}
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- clientWorkload(ctx, c, dir.Ino, fmt.Sprintf("/c%d", ci), w, ops)
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// clientWorkload is a mix of the ops on its own names in dir.
func clientWorkload(ctx context.Context, c *client.Client, dir uint64, dirPath string, w, ops int) error {
	for i := range ops {
		name := fmt.Sprintf("w%d-%d", w, i)
		a, err := c.Create(ctx, dir, name, 0o644)
		if err != nil {
			return err
		}
		data := []byte(strings.Repeat(name, 200))
		if _, err := c.Write(ctx, a.Ino, uint64(i*1000), data); err != nil {
			return err
		}
		buf := make([]byte, len(data))
		if n, err := c.Read(ctx, a.Ino, uint64(i*1000), buf); err != nil || string(buf[:n]) != string(data) {
			return fmt.Errorf("read back %s: %d bytes, %v", name, n, err)
		}
		path := dirPath + "/p" + name
		if _, err := c.Put(ctx, path, data[:100+i], i == 0); err != nil {
			return err
		}
		if got, err := c.Get(ctx, path); err != nil || string(got) != string(data[:100+i]) {
			return fmt.Errorf("get %s: %v", path, err)
		}
		switch i % 3 {
		case 0:
			if err := c.Rename(ctx, dir, name, dir, name+".r"); err != nil {
				return err
			}
		case 1:
			if err := c.Unlink(ctx, dir, name); err != nil {
				return err
			}
		case 2:
			if err := c.Truncate(ctx, a.Ino, 10); err != nil {
				return err
			}
			if i == 2 {
				if err := c.Fsync(ctx, a.Ino, w%2 == 0); err != nil {
					return err
				}
			}
		}
	}
	_, err := c.ReadDir(ctx, dir, 0, 1024)
	return err
}

// TestServer_Socket_StaleReplaced_OtherKept: a stale socket is replaced;
// a live one is ErrSocketInUse; a file that is not a socket is
// ErrNotSocket and stays; the socket gets its mode.
func TestServer_Socket_StaleReplaced_OtherKept(t *testing.T) {
	st, _ := newTestStore(t)
	dir := t.TempDir()

	stale := filepath.Join(dir, "stale.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	ts := startServer(t, st, Options{Socket: stale}, nil)
	if _, err := dial(t, stale).Stat(context.Background(), client.RootIno); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(stale)
	if err != nil || fi.Mode().Perm() != 0o660 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket %v %v, want a socket with mode 0660", fi.Mode(), err)
	}

	if _, err := New(st, Options{Socket: stale, Logger: testLogger}); !errors.Is(err, ErrSocketInUse) {
		t.Fatalf("a second server on a live socket: %v", err)
	}
	ts.stop(t)
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the socket outlived its server: %v", err)
	}

	regular := filepath.Join(dir, "data")
	os.WriteFile(regular, []byte("precious"), 0o644)
	_, err = New(st, Options{Socket: regular, Logger: testLogger})
	if !errors.Is(err, ErrNotSocket) || !strings.Contains(err.Error(), regular) {
		t.Fatalf("a regular file at the socket path: %v", err)
	}
	if b, err := os.ReadFile(regular); err != nil || string(b) != "precious" {
		t.Fatalf("the file at the socket path was touched: %q %v", b, err)
	}

	private := filepath.Join(dir, "private.sock")
	startServer(t, st, Options{Socket: private, SocketMode: 0o600, SocketGroup: fmt.Sprint(os.Getgid())}, nil)
	if fi, err := os.Stat(private); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v %v, want 0600", fi.Mode(), err)
	}

	if _, err := New(st, Options{Socket: filepath.Join(dir, strings.Repeat("x", 120)), Logger: testLogger}); err == nil {
		t.Fatal("a socket path over 107 bytes was accepted")
	}
}
