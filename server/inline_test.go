package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"ustore/client"
	"ustore/proto"
	"ustore/store"
)

// whereServed says which goroutine the hook runs on: a request's worker
// or the connection's reader.
func whereServed() string {
	buf := make([]byte, 16<<10)
	stack := string(buf[:runtime.Stack(buf, false)])
	// A worker's stack names readLoop too, as its creator: look for run
	// first.
	switch {
	case strings.Contains(stack, "(*conn).run("):
		return "worker"
	case strings.Contains(stack, "(*conn).readLoop"):
		return "reader"
	}
	return "?"
}

// TestServer_Inline_WhichOnReader: stat, lookup, statfs, a buffered write
// of whole blocks, a read of blocks in memory, a create, a mkdir, the
// unlink of an empty file, an rmdir (answered ENOTEMPTY too) and the rename
// of a file to a new name run on the connection's reader goroutine; a write
// of part of a block, a write with a sync flag, a readdir, an fsync, the
// unlink of a file with data or of a directory, a rename over an existing
// name and the rename of a directory (which the store declines to make
// without waiting) run on a worker goroutine of their own (the stack the
// hook runs on says which). Every one is answered.
func TestServer_Inline_WhichOnReader(t *testing.T) {
	var mu sync.Mutex
	where := map[string]string{}
	st, _ := newTestStore(t)
	ts := startServer(t, st, Options{}, func(ctx context.Context, req proto.Request) {
		w := whereServed()
		mu.Lock()
		where[describe(req)] = w
		mu.Unlock()
	})
	c := dial(t, ts.sock)
	ctx := context.Background()
	f, err := c.Create(ctx, client.RootIno, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	block := make([]byte, 8192)
	steps := []func() error{
		func() error { _, err := c.Stat(ctx, f.Ino); return err },
		func() error { _, err := c.Lookup(ctx, client.RootIno, "f"); return err },
		func() error { _, err := c.StatFS(ctx); return err },
		func() error { _, err := c.Write(ctx, f.Ino, 4096, block); return err },
		func() error { _, err := c.Write(ctx, f.Ino, 10, []byte("x")); return err },
		func() error { _, err := c.WriteWith(ctx, f.Ino, 0, block, proto.WriteDsync); return err },
		func() error { _, err := c.Read(ctx, f.Ino, 0, make([]byte, 4096)); return err },
		func() error { _, err := c.ReadDir(ctx, client.RootIno, 0, 10); return err },
		func() error { return c.Fsync(ctx, f.Ino, false) },
		func() error { _, err := c.Create(ctx, client.RootIno, "e", 0o644); return err },
		func() error { return c.Rename(ctx, client.RootIno, "e", client.RootIno, "e2") },
		func() error { return c.Rename2(ctx, client.RootIno, "e2", client.RootIno, "e", proto.RenameNoReplace) },
		func() error { _, err := c.Create(ctx, client.RootIno, "g", 0o644); return err },
		func() error { return c.Rename(ctx, client.RootIno, "g", client.RootIno, "e") },
		func() error { return c.Unlink(ctx, client.RootIno, "e") },
		func() error { _, err := c.Mkdir(ctx, client.RootIno, "d", 0o755); return err },
		func() error { return c.Rename(ctx, client.RootIno, "d", client.RootIno, "d2") },
		func() error { _, err := c.Mkdir(ctx, client.RootIno, "dd", 0o755); return err },
		func() error {
			dd, err := c.Lookup(ctx, client.RootIno, "dd")
			if err == nil {
				_, err = c.Create(ctx, dd.Ino, "e", 0o644)
			}
			return err
		},
		func() error { return want(c.Rmdir(ctx, client.RootIno, "dd"), syscall.ENOTEMPTY) },
		func() error { return want(c.Unlink(ctx, client.RootIno, "dd"), syscall.EISDIR) },
		func() error {
			dd, err := c.Lookup(ctx, client.RootIno, "dd")
			if err == nil {
				err = c.Unlink(ctx, dd.Ino, "e")
			}
			return err
		},
		func() error { return c.Rmdir(ctx, client.RootIno, "d2") },
		func() error { return c.Unlink(ctx, client.RootIno, "f") },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	want := map[string]string{
		"create": "reader", "unlink of an empty file": "reader", "unlink of a file with data": "worker",
		"mkdir": "reader", "stat": "reader", "lookup": "reader", "statfs": "reader",
		"write whole blocks": "reader", "write part of a block": "worker", "write dsync": "worker",
		"read": "reader", "readdir": "worker", "fsync": "worker",
		"rename to a new name": "reader", "rename2 to a new name": "reader",
		"rename over a name": "worker", "rename of a directory": "worker",
		"rmdir of an empty directory": "reader", "rmdir of a full directory": "reader",
		"unlink of a directory": "worker",
	}
	mu.Lock()
	defer mu.Unlock()
	for k, w := range want {
		if where[k] != w {
			t.Errorf("%s ran on %q, want the %s", k, where[k], w)
		}
	}
}

// TestServer_Inline_CachedRead: a read whose blocks are all in the store's
// memory — buffered pages, the page cache — is served on the connection's
// reader; one that must read the device (a hole not read before, here: no
// device block to read, but not yet cached), one over inlineReadMax and
// one of an inode not in memory go to a worker, and the first read makes
// the second of the same blocks a cached one. Every answer has the file's
// bytes.
func TestServer_Inline_CachedRead(t *testing.T) {
	var mu sync.Mutex
	var where []string
	st, _ := newTestStore(t)
	ts := startServer(t, st, Options{}, func(ctx context.Context, req proto.Request) {
		if _, ok := req.(*proto.Read); ok {
			w := whereServed()
			mu.Lock()
			where = append(where, w)
			mu.Unlock()
		}
	})
	c := dial(t, ts.sock)
	ctx := context.Background()
	f, err := c.Create(ctx, client.RootIno, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 512) // two blocks
	if _, err := c.Write(ctx, f.Ino, 0, data); err != nil {
		t.Fatal(err)
	}
	// The hole is read far past where the first read's read-ahead (a
	// sequential run from block 0, in the background) can have reached,
	// so that it is not cached when the worker reads it.
	const size, hole = 64 << 20, 32 << 20
	if err := c.Truncate(ctx, f.Ino, size); err != nil {
		t.Fatal(err)
	}
	want := make([]byte, size)
	copy(want, data)
	steps := []struct {
		what      string
		ino       uint64
		off, n    int
		where     string
		wantError bool
	}{
		{"buffered pages", f.Ino, 100, 5000, "reader", false},
		{"a hole not cached yet", f.Ino, hole, 8192, "worker", false},
		{"the hole, cached by the read before", f.Ino, hole, 8192, "reader", false},
		{"over inlineReadMax", f.Ino, 0, inlineReadMax + 4096, "worker", false},
		{"at the end of the file", f.Ino, size, 4096, "reader", false},
		{"an inode not in memory", 1 << 40, 0, 4096, "worker", true},
	}
	for i, step := range steps {
		buf := make([]byte, step.n)
		n, err := c.Read(ctx, step.ino, uint64(step.off), buf)
		if step.wantError != (err != nil) {
			t.Fatalf("%s: %v", step.what, err)
		}
		end := min(step.off+step.n, len(want))
		if err == nil && !bytes.Equal(buf[:n], want[step.off:end]) {
			t.Fatalf("%s: %d bytes, not the file's", step.what, n)
		}
		mu.Lock()
		got := where[i]
		mu.Unlock()
		if got != step.where {
			t.Errorf("%s ran on the %q, want the %s", step.what, got, step.where)
		}
	}
	if cs := st.CacheStats(); cs.CachedReads != 3 {
		t.Errorf("the store served %d cached reads, want 3", cs.CachedReads)
	}
}

// describe names a request for TestServer_Inline_WhichOnReader.
// want is nil if err is target, and an error saying what came otherwise.
func want(err, target error) error {
	if errors.Is(err, target) {
		return nil
	}
	return fmt.Errorf("got %v, want %v", err, target)
}

func describe(req proto.Request) string {
	if u, ok := req.(*proto.Unlink); ok {
		switch u.Name {
		case "e":
			return "unlink of an empty file"
		case "dd":
			return "unlink of a directory"
		}
		return "unlink of a file with data"
	}
	if r, ok := req.(*proto.Rmdir); ok {
		if r.Name == "dd" {
			return "rmdir of a full directory"
		}
		return "rmdir of an empty directory"
	}
	if r, ok := req.(*proto.Rename); ok {
		switch {
		case r.SrcName == "d":
			return "rename of a directory"
		case r.DstName == "e":
			return "rename over a name"
		}
		return "rename to a new name"
	}
	if _, ok := req.(*proto.Rename2); ok {
		return "rename2 to a new name"
	}
	if w, ok := req.(*proto.Write); ok {
		switch {
		case w.Flags&proto.WriteDsync != 0:
			return "write dsync"
		case w.Off%4096 == 0 && len(w.Data)%4096 == 0:
			return "write whole blocks"
		}
		return "write part of a block"
	}
	return req.Op().String()
}

// TestServer_Inline_NotHeldBehindWorker: stats pipelined around a request
// that a worker holds are answered while it is held — the reader batches
// the responses of the frames it finds buffered and flushes them before it
// waits — and the held request is answered once released.
func TestServer_Inline_NotHeldBehindWorker(t *testing.T) {
	st, _ := newTestStore(t)
	g := newGate(1, func(r proto.Request) bool { _, ok := r.(*proto.Read); return ok })
	ts := startServer(t, st, Options{}, g.hook)
	rc, _ := handshake(t, ts.sock)
	stats := func(first, last uint64) []byte {
		var b []byte
		for id := first; id <= last; id++ {
			b = append(b, request(t, id, &proto.Stat{Ino: client.RootIno})...)
		}
		return b
	}
	readAnswers := func(n int, seen map[uint64]bool) {
		for range n {
			f := rc.read()
			if f.Status != proto.StatusOK || f.ID == 6 || seen[f.ID] {
				t.Fatalf("response %+v", f)
			}
			seen[f.ID] = true
		}
	}
	// One write: the reader finds every frame buffered, so it holds the
	// stats' responses back until the held read, and must flush them
	// before it waits for the next frame.
	rc.write(append(stats(1, 5), request(t, 6, &proto.Read{Ino: 1 << 40, Len: 1})...))
	g.wait(t, 1)
	seen := map[uint64]bool{}
	readAnswers(5, seen)
	rc.write(stats(7, 11))
	readAnswers(5, seen)
	close(g.release)
	if f := rc.read(); f.ID != 6 || f.Status != proto.StatusNotExist {
		t.Fatalf("the held read: %+v", f)
	}
}

// TestServer_Inline_CreatesNotHeldBehindWorker: creates and unlinks
// pipelined behind a request that a worker holds are made and answered
// while it is held (on the reader, store.CreateNoWait and UnlinkNoWait),
// and the held request is answered once released.
func TestServer_Inline_CreatesNotHeldBehindWorker(t *testing.T) {
	st, _ := newTestStore(t)
	g := newGate(1, func(r proto.Request) bool { _, ok := r.(*proto.Read); return ok })
	ts := startServer(t, st, Options{}, g.hook)
	rc, _ := handshake(t, ts.sock)
	names := []string{"a", "b", "c", "d", "e"}
	var b []byte
	b = append(b, request(t, 1, &proto.Read{Ino: 1 << 40, Len: 1})...)
	for i, n := range names {
		b = append(b, request(t, uint64(2+i), &proto.Create{Dir: client.RootIno, Perm: 0o644, Name: n})...)
	}
	rc.write(b)
	g.wait(t, 1)
	seen := map[uint64]bool{}
	for range names {
		f := rc.read()
		if f.Status != proto.StatusOK || f.ID < 2 || f.ID > 6 || seen[f.ID] {
			t.Fatalf("create response %+v", f)
		}
		seen[f.ID] = true
	}
	b = nil
	for i, n := range names {
		b = append(b, request(t, uint64(7+i), &proto.Unlink{Dir: client.RootIno, Name: n})...)
	}
	rc.write(b)
	for range names {
		f := rc.read()
		if f.Status != proto.StatusOK || f.ID < 7 || f.ID > 11 || seen[f.ID] {
			t.Fatalf("unlink response %+v", f)
		}
		seen[f.ID] = true
	}
	close(g.release)
	if f := rc.read(); f.ID != 1 || f.Status != proto.StatusNotExist {
		t.Fatalf("the held read: %+v", f)
	}
	if left, err := st.ReadDir(store.RootIno, 0, 100); err != nil || len(left) != 0 {
		t.Fatalf("left in the root: %v %v", left, err)
	}
}
