package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"ustore/client"
	"ustore/dev/memdev"
	"ustore/server"
	"ustore/store"
)

// serve runs a real server on a memdev store for the test; the store is
// synced and checked at the end.
func serve(t *testing.T) (*client.Client, *store.Store) {
	t.Helper()
	c, st, _ := serveWith(t, server.Options{})
	return c, st
}

// serveWith is serve with the server's options (Socket and Logger are
// set here) and the server itself.
func serveWith(t *testing.T, opts server.Options) (*client.Client, *store.Store, *server.Server) {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	d := memdev.New(256 << 20)
	if err := store.Mkfs(d, store.MkfsOptions{}); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(d, store.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "s.sock")
	opts.Socket, opts.Logger = sock, log
	srv, err := server.New(st, opts)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background()) }()
	c, err := client.Dial(context.Background(), sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		if err := <-done; err != nil && !errors.Is(err, server.ErrClosed) {
			t.Error(err)
		}
		ctx := context.Background()
		if err := st.Sync(ctx); err != nil {
			t.Error(err)
		}
		if err := st.Check(); err != nil {
			t.Errorf("fsck: %v", err)
		}
		st.Close(ctx)
	})
	return c, st, srv
}

func randomBytes(n int, seed byte) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{seed}).Read(b)
	return b
}

// TestWriter_Abort_LeavesOldContent: an aborted or failed Writer removes
// its temporary file and the path keeps its old content.
func TestWriter_Abort_LeavesOldContent(t *testing.T) {
	c, _ := serve(t)
	ctx := context.Background()
	if _, err := c.Put(ctx, "/f", []byte("old"), false); err != nil {
		t.Fatal(err)
	}
	w, err := c.OpenWriter(ctx, "/f", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(randomBytes(2<<20+1, 1)); err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	// A cancelled context fails a Writer, which cleans up all the same.
	cctx, cancel := context.WithCancel(ctx)
	w2, err := c.OpenWriter(cctx, "/f", false)
	if err != nil {
		t.Fatal(err)
	}
	w2.Write(randomBytes(1<<20, 2))
	cancel()
	w2.Write(randomBytes(1<<20, 3))
	if err := w2.Close(); !errors.Is(err, context.Canceled) {
		t.Fatalf("close after cancel: %v", err)
	}
	if got, err := c.Get(ctx, "/f"); err != nil || string(got) != "old" {
		t.Fatalf("after abort: %q %v", got, err)
	}
	es, err := c.ReadDir(ctx, client.RootIno, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if strings.HasPrefix(e.Name, ".put.") {
			t.Fatalf("temporary file left: %s", e.Name)
		}
	}
	if _, err := c.OpenWriter(ctx, "/nodir/f", false); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("writer in a missing directory: %v", err)
	}
}

// TestReader_Streams_Concurrently: readers of several files on one client
// at once, read in odd sizes, each get their own bytes; a reader closed
// early gives up its reads.
func TestReader_Streams_Concurrently(t *testing.T) {
	c, _ := serve(t)
	ctx := context.Background()
	files := map[string][]byte{}
	for i, n := range []int{0, 1, 4096, 1 << 20, 1<<20 + 1, 5<<20 + 777} {
		p := "/file" + string(rune('a'+i))
		files[p] = randomBytes(n, byte(i))
		if _, err := c.Put(ctx, p, files[p], false); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for p, want := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.OpenReader(ctx, p)
			if err != nil {
				t.Error(err)
				return
			}
			defer r.Close()
			var got bytes.Buffer
			buf := make([]byte, 33333)
			for {
				n, err := r.Read(buf)
				got.Write(buf[:n])
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("%s: %d bytes back of %d", p, got.Len(), len(want))
			}
		}()
	}
	wg.Wait()
	r, err := c.OpenReader(ctx, "/filef")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	if _, err := r.Read(buf); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if _, err := r.Read(buf); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("read after close: %v", err)
	}
	// The connection is fine and its slots are free.
	if got, err := c.Get(ctx, "/filef"); err != nil || !bytes.Equal(got, files["/filef"]) {
		t.Fatalf("get after an early close: %d bytes, %v", len(got), err)
	}
}

// TestReader_FileShrinks_EndsEarly: a file truncated while it is read ends
// the stream where it now ends, without an error.
func TestReader_FileShrinks_EndsEarly(t *testing.T) {
	c, _ := serve(t)
	ctx := context.Background()
	data := randomBytes(4<<20, 9)
	a, err := c.Put(ctx, "/f", data, false)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.OpenReader(ctx, "/f")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := c.Truncate(ctx, a.Ino, 1<<20+5); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > len(data) || !bytes.Equal(got[:1<<20+5], data[:1<<20+5]) {
		t.Fatalf("read %d bytes", len(got))
	}
}

// TestReader_ConsumerPauses_PastWriteTimeout: a Reader's consumer that
// pauses longer than the server's write timeout loses nothing: the
// read-ahead's responses are read meanwhile (by the client's background
// reader), so the server's writes never stall and the connection stays.
func TestReader_ConsumerPauses_PastWriteTimeout(t *testing.T) {
	c, _, _ := serveWith(t, server.Options{WriteTimeout: time.Second})
	ctx := context.Background()
	data := randomBytes(24<<20, 9)
	if _, err := c.Put(ctx, "/src", data, false); err != nil {
		t.Fatal(err)
	}
	r, err := c.OpenReader(ctx, "/src")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := make([]byte, 0, len(data))
	p := make([]byte, 64<<10)
	paused := false
	for {
		n, err := r.Read(p)
		got = append(got, p[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read after %d bytes: %v", len(got), err)
		}
		if len(got) == 3<<19 {
			time.Sleep(100 * time.Millisecond) // the read-ahead in flight is all answered
		}
		if !paused && len(got) >= 5<<19 {
			paused = true
			time.Sleep(1500 * time.Millisecond) // past the write timeout
		}
	}
	if !bytes.Equal(got, data) {
		t.Fatal("the data read is not the data written")
	}
	if _, err := c.Stat(ctx, client.RootIno); err != nil {
		t.Fatalf("the client after the pause: %v", err)
	}
}
