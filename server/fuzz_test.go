package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"ustore/client"
	"ustore/proto"
	"ustore/store"
)

// The live-server fuzzer: FuzzServer_Frames sends fuzzed bytes, after a
// good hello, over a real Unix socket to a running server, while
// well-behaved clients work on their own files. Each input is one
// connection: its bytes, a half-close, then every response until the
// server closes. It checks that
//   - every byte the server sends back is a well-formed response frame;
//   - the server ends the connection (no input hangs it);
//   - the well-behaved clients see no error and read back what they
//     wrote;
//   - the store passes fsck (every fsckEvery inputs, and at the end).
//
// The fuzzed requests really run on the store. A filter (Server.testFilter)
// keeps them off the well-behaved clients' directory and files — every one
// exists before the fuzzing starts, so the set is fixed — and keeps the
// store from filling up; the good clients' requests carry goodTraceparent,
// which the filter lets through (an input holding it is skipped).

// goodTraceparent marks the well-behaved clients' requests.
const goodTraceparent = "00-600d600d600d600d600d600d600d600d-600d600d600d600d-01"

// goodDir is the well-behaved clients' directory, in the root.
const goodDir = "good"

// fuzzGoodClients work beside the fuzzer; fsckEvery inputs the store is
// checked.
const (
	fuzzGoodClients = 2
	fsckEvery       = 5000
)

func FuzzServer_Frames(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed)
	}
	st, _ := newTestStore(f)
	ts := startServer(f, st, Options{FrameTimeout: 5 * time.Second}, nil)
	g := startGoodClients(f, ts.sock)
	filter := g.filter(st)
	ts.testFilter.Store(&filter)
	var inputs atomic.Int64
	f.Fuzz(func(t *testing.T, in []byte) {
		if bytes.Contains(in, []byte(goodTraceparent)) {
			return // it would pass the filter as a good client
		}
		if err := g.failed(); err != nil {
			t.Fatalf("a well-behaved client failed: %v (statfs %+v)", err, st.StatFS())
		}
		sendFuzzed(t, ts.sock, in)
		if inputs.Add(1)%fsckEvery == 0 {
			if err := g.check(st); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// sendFuzzed sends in on a new connection, half-closes it and reads every
// response until the server closes: each must be a well-formed frame.
func sendFuzzed(t *testing.T, sock string, in []byte) {
	rc, _ := handshake(t, sock)
	rc.nc.Write(in) // the server may close first
	rc.nc.CloseWrite()
	for {
		f, err := proto.ReadFrame(rc.br, proto.KindResponse, proto.FrameSizeMax, nil)
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			return
		}
		if err != nil {
			t.Fatalf("reading the server's responses: %v", err)
		}
		if f.ID == 0 && f.Status == proto.StatusOK {
			t.Fatalf("a connection-level OK: %+v", f)
		}
	}
}

// fuzzSeeds are one valid frame of each op, a few pipelined, and some
// that break the rules the server must survive.
func fuzzSeeds(f *testing.F) [][]byte {
	reqs := []proto.Request{
		&proto.Lookup{Dir: client.RootIno, Name: "f"},
		&proto.Create{Dir: client.RootIno, Name: "f", Perm: 0o644},
		&proto.Mkdir{Dir: client.RootIno, Name: "d", Perm: 0o755},
		&proto.Link{Ino: 257, Dir: client.RootIno, Name: "l"},
		&proto.Unlink{Dir: client.RootIno, Name: "f"},
		&proto.Rmdir{Dir: client.RootIno, Name: "d"},
		&proto.Rename{SrcDir: client.RootIno, SrcName: "f", DstDir: client.RootIno, DstName: "g"},
		&proto.ReadDir{Dir: client.RootIno, Max: 16},
		&proto.Stat{Ino: client.RootIno},
		&proto.SetAttr{Ino: 257, Mask: proto.SetSize, Size: 10},
		&proto.StatFS{},
		&proto.Write{Ino: 257, Off: 0, Data: []byte("fuzz")},
		&proto.Read{Ino: 257, Off: 0, Len: 4096},
		&proto.Fsync{Ino: 257},
		&proto.Sync{},
		&proto.Resolve{Path: "/f"},
		&proto.Put{Path: "/p", Data: []byte("put")},
		&proto.Get{Path: "/p"},
		&proto.Symlink{Dir: client.RootIno, Name: "s", Target: "p"},
		&proto.Readlink{Ino: 258},
	}
	tp, err := proto.ParseTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	if err != nil {
		f.Fatal(err)
	}
	var seeds [][]byte
	var all []byte
	for i, r := range reqs {
		b, err := proto.AppendRequest(nil, uint64(i+1), proto.Traceparent{}, r)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, b)
		all = append(all, b...)
		if i%4 == 0 {
			b, _ = proto.AppendRequest(nil, uint64(i+1), tp, r)
			seeds = append(seeds, b)
		}
	}
	seeds = append(seeds, all) // pipelined
	stat, _ := proto.AppendRequest(nil, 1, proto.Traceparent{}, &proto.Stat{Ino: client.RootIno})
	seeds = append(seeds,
		append(append([]byte(nil), stat...), stat...), // a reused id
		stat[:10],                                // truncated
		append(header(16, 'Q', 200, 5), stat...), // unknown op, then a request
	)
	return seeds
}

// goodClients are the well-behaved clients: each owns a file in goodDir,
// made before the fuzzing starts, and writes, reads back, fsyncs, renames
// and lists it in a loop.
type goodClients struct {
	dir    uint64
	inodes map[uint64]bool // goodDir and every file in it: fixed

	pause sync.RWMutex // held (read) by each round; check takes it to quiesce
	err   atomic.Pointer[error]
	stop  chan struct{}
	wg    sync.WaitGroup
}

func startGoodClients(tb testing.TB, sock string) *goodClients {
	ctx := context.Background()
	g := &goodClients{inodes: map[uint64]bool{}, stop: make(chan struct{})}
	tp := func(context.Context) string { return goodTraceparent }
	c, err := client.DialOptions(ctx, sock, client.Options{Traceparent: tp})
	if err != nil {
		tb.Fatal(err)
	}
	d, err := c.Mkdir(ctx, client.RootIno, goodDir, 0o755)
	if err != nil {
		tb.Fatal(err)
	}
	g.dir = d.Ino
	g.inodes[d.Ino] = true
	files := make([]uint64, fuzzGoodClients)
	for i := range files {
		a, err := c.Create(ctx, d.Ino, fmt.Sprintf("g%d-a", i), 0o644)
		if err != nil {
			tb.Fatal(err)
		}
		files[i] = a.Ino
		g.inodes[a.Ino] = true
	}
	c.Close()
	for i, ino := range files {
		gc, err := client.DialOptions(ctx, sock, client.Options{Traceparent: tp})
		if err != nil {
			tb.Fatal(err)
		}
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			defer gc.Close()
			if err := g.work(gc, i, ino); err != nil {
				g.err.CompareAndSwap(nil, &err)
			}
		}()
	}
	tb.Cleanup(func() {
		close(g.stop)
		g.wg.Wait()
		if err := g.failed(); err != nil {
			tb.Errorf("a well-behaved client failed: %v", err)
		}
	})
	return g
}

func (g *goodClients) failed() error {
	if p := g.err.Load(); p != nil {
		return *p
	}
	return nil
}

// work is one good client's loop until stop.
func (g *goodClients) work(c *client.Client, i int, ino uint64) error {
	ctx := context.Background()
	names := [2]string{fmt.Sprintf("g%d-a", i), fmt.Sprintf("g%d-b", i)}
	name := 0
	buf := make([]byte, 8192)
	got := make([]byte, len(buf))
	for round := 0; ; round++ {
		select {
		case <-g.stop:
			return nil
		case <-time.After(200 * time.Microsecond):
		}
		g.pause.RLock()
		err := func() error {
			off := uint64(round%16) * 4096
			for j := range buf {
				buf[j] = byte(round + j + i)
			}
			if _, err := c.Write(ctx, ino, off, buf); err != nil {
				return fmt.Errorf("write: %w", err)
			}
			if n, err := c.Read(ctx, ino, off, got); err != nil || n != len(got) || !bytes.Equal(got, buf) {
				return fmt.Errorf("read back at %d: %d bytes, %v (or the data differs)", off, n, err)
			}
			switch round % 8 {
			case 1:
				if err := c.Fsync(ctx, ino, round%16 == 1); err != nil {
					return fmt.Errorf("fsync: %w", err)
				}
			case 3:
				if err := c.Rename(ctx, g.dir, names[name], g.dir, names[1-name]); err != nil {
					return fmt.Errorf("rename: %w", err)
				}
				name = 1 - name
				if a, err := c.Lookup(ctx, g.dir, names[name]); err != nil || a.Ino != ino {
					return fmt.Errorf("lookup after rename: %+v, %v", a, err)
				}
			case 5:
				es, err := c.ReadDir(ctx, g.dir, 0, 64)
				if err != nil || len(es) != fuzzGoodClients {
					return fmt.Errorf("readdir: %d entries, %v", len(es), err)
				}
			case 7:
				if a, err := c.Stat(ctx, ino); err != nil || a.Nlink != 1 || a.Size < off+uint64(len(buf)) {
					return fmt.Errorf("stat: %+v, %v", a, err)
				}
			}
			return nil
		}()
		g.pause.RUnlock()
		if err != nil {
			return fmt.Errorf("good client %d, round %d: %w", i, round, err)
		}
	}
}

// check quiesces the good clients and checks the store (fsck). Between
// inputs nothing of the fuzzer is under way: each input's connection has
// ended, all its requests answered, before the input returns.
func (g *goodClients) check(st *store.Store) error {
	g.pause.Lock()
	defer g.pause.Unlock()
	ctx := context.Background()
	if err := st.Sync(ctx); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	if err := st.Check(); err != nil {
		return fmt.Errorf("fsck: %w", err)
	}
	return nil
}

// filter refuses the fuzzer's requests that would touch the good clients'
// directory or files, or fill the store. The good clients' own requests
// pass.
func (g *goodClients) filter(st *store.Store) func(ctx context.Context, req proto.Request) error {
	refuse := fmt.Errorf("fuzz filter: %w", syscall.EPERM)
	full := fmt.Errorf("fuzz filter: %w", syscall.ENOSPC)
	return func(ctx context.Context, req proto.Request) error {
		if Traceparent(ctx) == goodTraceparent {
			return nil
		}
		mine := func(inos ...uint64) bool {
			for _, ino := range inos {
				if g.inodes[ino] {
					return true
				}
			}
			return false
		}
		named := func(dir uint64, name string) bool { return dir == client.RootIno && name == goodDir }
		var protected, grows bool
		switch r := req.(type) {
		case *proto.Create:
			protected, grows = mine(r.Dir), true
		case *proto.Mkdir:
			protected, grows = mine(r.Dir), true
		case *proto.Link:
			protected, grows = mine(r.Ino, r.Dir), true
		case *proto.Unlink:
			protected = mine(r.Dir) || named(r.Dir, r.Name)
		case *proto.Rmdir:
			protected = mine(r.Dir) || named(r.Dir, r.Name)
		case *proto.Rename:
			protected = mine(r.SrcDir, r.DstDir) || named(r.SrcDir, r.SrcName) || named(r.DstDir, r.DstName)
		case *proto.SetAttr:
			protected, grows = mine(r.Ino), true
		case *proto.Write:
			protected, grows = mine(r.Ino), true
		case *proto.Put:
			protected, grows = strings.Contains(r.Path, goodDir), true
		}
		if protected {
			return refuse
		}
		if grows {
			if fs := st.StatFS(); fs.BlocksAvail < fs.Blocks/2 {
				return full
			}
		}
		return nil
	}
}
