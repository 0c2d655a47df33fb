package server

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"ustore/client"
	"ustore/proto"
)

// orphanSetup creates /f with n bytes through c and returns its inode.
func orphanSetup(t *testing.T, c *client.Client, n int) uint64 {
	t.Helper()
	ctx := context.Background()
	a, err := c.Create(ctx, client.RootIno, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(ctx, a.Ino, 0, randomBytes(n)); err != nil {
		t.Fatal(err)
	}
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	return a.Ino
}

// usedBlocks is the store's used blocks after a sync (an unlink's space is
// free once its commit is durable).
func usedBlocks(t *testing.T, c *client.Client) uint64 {
	t.Helper()
	ctx := context.Background()
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	f, err := c.StatFS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return f.Blocks - f.BlocksFree
}

// TestServer_Handles_OpenUnlinkRelease: a file unlinked while a handle
// holds it reads and writes by number, its space taken, until the
// release frees it; a second release of the handle is EBADF.
func TestServer_Handles_OpenUnlinkRelease(t *testing.T) {
	ctx := context.Background()
	ts := newStoreServer(t)
	c := dial(t, ts.sock)
	empty := usedBlocks(t, c)
	ino := orphanSetup(t, c, 1<<20)
	h, a, err := c.Open(ctx, ino)
	if err != nil || h == 0 || a.Ino != ino || a.Size != 1<<20 {
		t.Fatalf("open: handle %d, %+v, %v", h, a, err)
	}
	if err := c.Unlink(ctx, client.RootIno, "f"); err != nil {
		t.Fatal(err)
	}
	other := dial(t, ts.sock)
	if _, err := other.Lookup(ctx, client.RootIno, "f"); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("lookup from another connection: %v, want ENOENT", err)
	}
	if _, err := c.Write(ctx, ino, 1<<20, []byte("more")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if n, err := c.Read(ctx, ino, 1<<20, got); err != nil || n != 4 || string(got) != "more" {
		t.Fatalf("read of the orphan: %q, %v", got, err)
	}
	if used := usedBlocks(t, c); used < empty+(1<<20)/4096 {
		t.Fatalf("space freed while open: %d blocks used, %d empty", used, empty)
	}
	if err := other.Release(ctx, h); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("release of another connection's handle: %v, want EBADF", err)
	}
	if err := c.Release(ctx, h); err != nil {
		t.Fatal(err)
	}
	if used := usedBlocks(t, c); used > empty+2 {
		t.Fatalf("after the release %d blocks used, %d empty", used, empty)
	}
	if err := c.Release(ctx, h); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("second release: %v, want EBADF", err)
	}
	var se *proto.StatusError
	if err := c.Release(ctx, 12345); !errors.As(err, &se) || se.Status != proto.StatusBadHandle {
		t.Fatalf("release of an unknown handle: %v, want StatusBadHandle", err)
	}
}

// TestServer_Handles_ConnCloseReleases: a connection that ends holding
// handles (closed by the client, no release sent) has them released: the
// orphan is freed.
func TestServer_Handles_ConnCloseReleases(t *testing.T) {
	ctx := context.Background()
	ts := newStoreServer(t)
	c := dial(t, ts.sock)
	empty := usedBlocks(t, c)
	ino := orphanSetup(t, c, 1<<20)
	holder := dial(t, ts.sock)
	for range 3 {
		if _, _, err := holder.Open(ctx, ino); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Unlink(ctx, client.RootIno, "f"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stat(ctx, ino); err != nil {
		t.Fatalf("stat of the orphan while held: %v", err)
	}
	holder.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := c.Stat(ctx, ino)
		if errors.Is(err, syscall.ENOENT) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the orphan outlived its connection: stat %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if used := usedBlocks(t, c); used > empty+2 {
		t.Fatalf("after the connection ended %d blocks used, %d empty", used, empty)
	}
}

// TestServer_Handles_Cap: past HandlesPerConnMax open is EMFILE; a
// release makes room; other connections have their own.
func TestServer_Handles_Cap(t *testing.T) {
	ctx := context.Background()
	st, _ := newTestStore(t)
	ts := startServer(t, st, Options{HandlesPerConnMax: 3}, nil)
	c := dial(t, ts.sock)
	ino := orphanSetup(t, c, 10)
	var hs []uint64
	for range 3 {
		h, _, err := c.Open(ctx, ino)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	_, _, err := c.Open(ctx, ino)
	var se *proto.StatusError
	if !errors.As(err, &se) || se.Status != proto.StatusTooManyOpen || !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("open past the cap: %v, want EMFILE", err)
	}
	if _, _, err := dial(t, ts.sock).Open(ctx, ino); err != nil {
		t.Fatalf("open on another connection: %v", err)
	}
	if err := c.Release(ctx, hs[0]); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Open(ctx, ino); err != nil {
		t.Fatalf("open after a release: %v", err)
	}
	if _, _, err := c.Open(ctx, client.RootIno); !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("open at the cap: %v", err)
	}
}

// TestServer_Handles_Errors: open of a directory or of an inode that does
// not exist holds nothing.
func TestServer_Handles_Errors(t *testing.T) {
	ctx := context.Background()
	st, _ := newTestStore(t)
	ts := startServer(t, st, Options{HandlesPerConnMax: 1}, nil)
	c := dial(t, ts.sock)
	if _, _, err := c.Open(ctx, client.RootIno); !errors.Is(err, syscall.EISDIR) {
		t.Fatalf("open of a directory: %v", err)
	}
	if _, _, err := c.Open(ctx, 1<<40); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("open of a missing inode: %v", err)
	}
	// The failed opens took no room under the cap of one.
	if _, _, err := c.Open(ctx, orphanSetup(t, c, 10)); err != nil {
		t.Fatal(err)
	}
}

// TestServer_Handles_UniqueAcrossConns: handle numbers are the server's,
// never given twice on any connection, so a client that lost its
// connection and releases an old handle on a new one gets EBADF and drops
// no other file's hold.
func TestServer_Handles_UniqueAcrossConns(t *testing.T) {
	ctx := context.Background()
	ts := newStoreServer(t)
	old := dial(t, ts.sock)
	ino := orphanSetup(t, old, 10)
	h1, _, err := old.Open(ctx, ino)
	if err != nil {
		t.Fatal(err)
	}
	old.Close()
	c := dial(t, ts.sock)
	h2, _, err := c.Open(ctx, ino)
	if err != nil {
		t.Fatal(err)
	}
	if h2 == h1 {
		t.Fatalf("handle %d given twice, on two connections", h1)
	}
	if err := c.Release(ctx, h1); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("release of the old connection's handle on a new one: %v, want EBADF", err)
	}
	if err := c.Release(ctx, h2); err != nil {
		t.Fatalf("the new connection's own handle: %v", err)
	}
}

// TestServer_Handles_NotIdle: a connection holding a handle is not closed
// as idle; once it releases the handle, it is.
func TestServer_Handles_NotIdle(t *testing.T) {
	st, _ := newTestStore(t)
	ts := startServer(t, st, Options{IdleTimeout: 100 * time.Millisecond}, nil)
	a, err := st.Create(client.RootIno, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := handshake(t, ts.sock)
	rc.write(request(t, 1, &proto.Open{Ino: uint64(a.Ino)}))
	f := rc.read()
	if f.ID != 1 || f.Status != proto.StatusOK {
		t.Fatalf("open: %+v", f)
	}
	rep, err := proto.DecodeReply(proto.OpOpen, f.Payload)
	if err != nil {
		t.Fatal(err)
	}
	h := rep.(*proto.OpenReply).Handle
	time.Sleep(600 * time.Millisecond) // six idle timeouts
	rc.write(request(t, 2, &proto.Stat{Ino: uint64(a.Ino)}))
	if f := rc.read(); f.ID != 2 || f.Status != proto.StatusOK {
		t.Fatalf("stat after six idle timeouts holding a handle: %+v", f)
	}
	rc.write(request(t, 3, &proto.Release{Handle: h}))
	if f := rc.read(); f.ID != 3 || f.Status != proto.StatusOK {
		t.Fatalf("release: %+v", f)
	}
	if f := rc.read(); f.ID != 0 || f.Status != proto.StatusTimedOut {
		t.Fatalf("idle after the release: %+v, want a connection-level ETIMEDOUT", f)
	}
	rc.expectClosed()
}
