package servicebench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"ustore/bench/layout"
	"ustore/client"
	"ustore/dev"
	"ustore/dev/devopen"
	"ustore/dev/memdev"
	"ustore/proto"
	"ustore/server"
	"ustore/store"
)

// bench is one run's state.
type bench struct {
	cfg    Config
	ctx    context.Context
	tmpDir string // the sockets of the server and the echo server

	// The run's own server (nil with an external one).
	dev    dev.Device
	mem    *memdev.Device
	st     *store.Store
	srv    *server.Server
	served chan error

	proc     *process // the run's server as a process of its own
	echoProc *process // the echo server as a process of its own

	sock     string   // the server's socket
	benchDir string   // the files' directory, with an external server
	files    []uint64 // the files' inode numbers as the wire carries them
	echo     *echoServer
	echoSock string

	sizes map[string][2]int // op → the protocol's request and response frame sizes
}

// Run runs every cell and returns the report; after a failure, the report
// holds the cells that finished.
func Run(cfg Config) (rep *Report, err error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	b := &bench{cfg: cfg, ctx: context.Background()}
	rep = &Report{
		Date: time.Now().UTC().Format(time.RFC3339), GoVersion: runtime.Version(),
		GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU(),
		Duration: cfg.Duration.String(), BS: cfg.BS, FileSize: cfg.FileSize,
	}
	defer func() { err = errors.Join(err, b.close()) }()
	if err := b.setup(rep); err != nil {
		return rep, err
	}
	systems := slices.Clone(cfg.Systems)
	if b.st == nil && slices.Contains(systems, "store") {
		systems = slices.DeleteFunc(systems, func(s string) bool { return s == "store" })
		rep.Notes = append(rep.Notes, "store: skipped (the server is not in this process: no store here)")
	}
	cells := len(cfg.Ops) * len(cfg.Clients) * len(cfg.Depths) * len(systems)
	cell := 0
	for _, op := range Ops { // in this order, whatever the order given
		if !slices.Contains(cfg.Ops, op) {
			continue
		}
		for _, clients := range cfg.Clients {
			for _, depth := range cfg.Depths {
				for _, system := range Systems {
					if !slices.Contains(systems, system) {
						continue
					}
					cell++
					r, err := b.cell(system, op, clients, depth, cell, cells)
					if err != nil {
						return rep, fmt.Errorf("%s %s, %d clients, depth %d: %w", system, op, clients, depth, err)
					}
					rep.Results = append(rep.Results, r)
					if op == "write" {
						if err := b.sync(); err != nil {
							return rep, err
						}
					}
					if b.mem != nil {
						b.mem.ForgetHistory() // memdev keeps every write otherwise
					}
				}
			}
		}
	}
	rep.Ratios = ratios(rep.Results)
	return rep, nil
}

func (b *bench) phase(format string, args ...any) {
	if b.cfg.Phase != nil {
		b.cfg.Phase(fmt.Sprintf(format, args...))
	}
}

// setup starts the server (unless external) and the echo server, and
// writes every client's file.
func (b *bench) setup(rep *Report) error {
	var err error
	// Socket paths are short (108 bytes): a directory of their own in
	// the system's temporary directory.
	if b.tmpDir, err = os.MkdirTemp("", "ustore-bench-"); err != nil {
		return err
	}
	b.sizes, err = frameSizes(b.cfg.BS)
	if err != nil {
		return err
	}
	if slices.Contains(b.cfg.Systems, "echo") {
		b.echoSock = filepath.Join(b.tmpDir, "echo.sock")
		if b.cfg.EchoProcess != nil {
			b.phase("starting the echo server process")
			if b.echoProc, err = startProcess("the echo server", b.cfg.EchoProcess(b.echoSock), echoReady(b.echoSock)); err != nil {
				return err
			}
			rep.Notes = append(rep.Notes, fmt.Sprintf("echo: a process of its own (pid %d)", b.echoProc.pid()))
		} else if b.echo, err = startEcho(b.echoSock); err != nil {
			return err
		}
	}
	nfiles := slices.Max(b.cfg.Clients)
	if b.cfg.Socket != "" {
		b.sock = b.cfg.Socket
		rep.Device = "an external server"
		rep.Socket = b.sock
		return b.filesByClient(nfiles)
	}
	if !b.cfg.Memdev && !b.cfg.InProcess {
		return b.setupProcess(rep, nfiles)
	}
	if b.cfg.Memdev {
		b.mem = memdev.New(b.cfg.Size / dev.SectorSize * dev.SectorSize)
		b.dev = b.mem
		rep.Device = fmt.Sprintf("memdev (in memory), %d bytes", b.mem.Size())
	} else {
		d, choice, err := b.layOutAndOpen()
		if err != nil {
			return err
		}
		b.dev = d
		rep.Device = fmt.Sprintf("file %s, %d bytes laid out, backend %s (O_DIRECT)", b.cfg.File, d.Size(), choice.Backend)
	}
	b.phase("formatting the device")
	if err := store.Mkfs(b.dev, store.MkfsOptions{}); err != nil {
		return err
	}
	if b.st, err = store.Open(b.dev, store.Options{Logger: b.cfg.Logger}); err != nil {
		return err
	}
	b.sock = filepath.Join(b.tmpDir, "ustore.sock")
	rep.Socket = "a server in this process, on " + b.sock
	if b.srv, err = server.New(b.st, server.Options{Socket: b.sock, SocketMode: 0o600, Logger: b.cfg.Logger}); err != nil {
		return err
	}
	b.served = make(chan error, 1)
	go func() { b.served <- b.srv.Serve(context.Background()) }()
	return b.filesInProcess(nfiles)
}

// layOutAndOpen writes the device file in full (layout.File: its blocks
// allocated, so that O_DIRECT writes do not allocate) and opens it.
func (b *bench) layOutAndOpen() (dev.Device, devopen.Choice, error) {
	if dir := filepath.Dir(b.cfg.File); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, devopen.Choice{}, err
		}
	}
	if _, err := layout.File(b.cfg.File, b.cfg.Size, b.phase); err != nil {
		return nil, devopen.Choice{}, fmt.Errorf("lay out %s: %w", b.cfg.File, err)
	}
	return devopen.Open(b.cfg.File, devopen.Options{Backend: b.cfg.Backend, Logger: b.cfg.Logger})
}

// setupProcess lays out and formats the device file, then starts the
// server as a process of its own on it (ServerProcess) and writes each
// client's file through a client.
func (b *bench) setupProcess(rep *Report, nfiles int) error {
	d, choice, err := b.layOutAndOpen()
	if err != nil {
		return err
	}
	b.phase("formatting the device")
	size := d.Size()
	if err := errors.Join(store.Mkfs(d, store.MkfsOptions{}), d.Close()); err != nil {
		return err
	}
	b.sock = filepath.Join(b.tmpDir, "ustore.sock")
	b.phase("starting the server process")
	b.proc, err = startProcess("the server", b.cfg.ServerProcess(b.cfg.File, b.sock), func() error {
		c, err := b.dial()
		if err == nil {
			c.Close()
		}
		return err
	})
	if err != nil {
		return err
	}
	rep.Device = fmt.Sprintf("file %s, %d bytes laid out, formatted (backend %s here)", b.cfg.File, size, choice.Backend)
	rep.Socket = fmt.Sprintf("a server in its own process (pid %d), on %s", b.proc.pid(), b.sock)
	return b.filesByClient(nfiles)
}

// filesInProcess creates and writes each client's file on the store.
func (b *bench) filesInProcess(n int) error {
	b.phase("writing %d files of %d bytes", n, b.cfg.FileSize)
	data := pattern(int(b.cfg.FileSize), b.cfg.Seed)
	dir, err := b.st.Mkdir(store.RootIno, "bench", 0o755)
	if err != nil {
		return err
	}
	for i := range n {
		a, err := b.st.Create(dir.Ino, "c"+strconv.Itoa(i), 0o644)
		if err != nil {
			return err
		}
		if _, err := b.st.Write(a.Ino, 0, data); err != nil {
			return err
		}
		b.files = append(b.files, uint64(a.Ino))
	}
	return b.st.Sync(b.ctx)
}

// filesByClient creates and writes each client's file through a client,
// in a directory of this run's own on the external server.
func (b *bench) filesByClient(n int) error {
	b.phase("writing %d files of %d bytes on the server at %s", n, b.cfg.FileSize, b.sock)
	c, err := b.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	name := fmt.Sprintf("ustore-bench-service-%d-%d", os.Getpid(), time.Now().UnixNano())
	dir, err := c.Mkdir(b.ctx, client.RootIno, name, 0o755)
	if err != nil {
		return err
	}
	b.benchDir = name
	data := pattern(int(b.cfg.FileSize), b.cfg.Seed)
	for i := range n {
		a, err := c.Create(b.ctx, dir.Ino, "c"+strconv.Itoa(i), 0o644)
		if err != nil {
			return err
		}
		b.files = append(b.files, a.Ino)
		if _, err := c.Write(b.ctx, a.Ino, 0, data); err != nil {
			return err
		}
	}
	return c.Sync(b.ctx)
}

func (b *bench) dial() (*client.Client, error) {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	return client.Dial(ctx, b.sock)
}

// sync makes the writes of a cell durable, so that their writeback is not
// charged to the next cell.
func (b *bench) sync() error {
	if b.st != nil {
		return b.st.Sync(b.ctx)
	}
	c, err := b.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Sync(b.ctx)
}

// close stops the servers and unmounts, or removes the run's files from
// the external server.
func (b *bench) close() error {
	var errs []error
	if b.echo != nil {
		b.echo.close()
	}
	if b.echoProc != nil {
		errs = append(errs, b.echoProc.stop())
	}
	if b.proc != nil {
		// Its files go with its device.
		b.benchDir = ""
		errs = append(errs, b.proc.stop())
	}
	if b.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		errs = append(errs, b.srv.Shutdown(ctx))
		cancel()
		if err := <-b.served; err != nil && !errors.Is(err, server.ErrClosed) {
			errs = append(errs, err)
		}
	}
	if b.st != nil {
		errs = append(errs, b.st.Close(context.Background()))
	}
	if b.dev != nil {
		errs = append(errs, b.dev.Close())
	}
	if b.benchDir != "" {
		errs = append(errs, b.removeBenchDir())
	}
	if b.tmpDir != "" {
		os.RemoveAll(b.tmpDir)
	}
	return errors.Join(errs...)
}

func (b *bench) removeBenchDir() error {
	c, err := b.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	dir, err := c.Lookup(b.ctx, client.RootIno, b.benchDir)
	if err != nil {
		return err
	}
	for i := range b.files {
		if err := c.Unlink(b.ctx, dir.Ino, "c"+strconv.Itoa(i)); err != nil {
			return err
		}
	}
	return c.Rmdir(b.ctx, client.RootIno, b.benchDir)
}

// frameSizes encodes each op's request and response as the client and
// server do (a 4 KiB write's frame carries its data; so does a read's
// response), for the echo server.
func frameSizes(bs int) (map[string][2]int, error) {
	attr := proto.Attr{Ino: 300, Mode: syscall.S_IFREG | 0o644, Nlink: 1, Size: 4 << 20}
	data := make([]byte, bs)
	m := map[string][2]int{}
	for op, rr := range map[string]struct {
		op  proto.Op
		req proto.Request
		rep proto.Reply
	}{
		"write": {proto.OpWrite, &proto.Write{Ino: 300, Off: 1 << 20, Data: data}, &proto.WriteReply{N: uint32(bs)}},
		"read":  {proto.OpRead, &proto.Read{Ino: 300, Off: 1 << 20, Len: uint32(bs)}, &proto.ReadReply{Data: data}},
		"stat":  {proto.OpStat, &proto.Stat{Ino: 300}, &attr},
	} {
		sz, err := FrameSizes(rr.op, rr.req, rr.rep)
		if err != nil {
			return nil, err
		}
		m[op] = sz
	}
	return m, nil
}

// FrameSizes encodes req and its response rep (of op) as the client and
// server do and returns the two frames' sizes, as the echo reference
// sends them (at least its header each way).
func FrameSizes(op proto.Op, req proto.Request, rep proto.Reply) ([2]int, error) {
	q, err := proto.AppendRequest(nil, 1, proto.Traceparent{}, req)
	if err != nil {
		return [2]int{}, err
	}
	r, err := proto.AppendResponse(nil, 1, op, proto.StatusOK, "", rep)
	if err != nil {
		return [2]int{}, err
	}
	return [2]int{max(len(q), echoHeader), max(len(r), 4)}, nil
}

// worker is one goroutine of a cell: its latency samples (ns) and count.
type worker struct {
	ops atomic.Int64
	lat []uint32
	err error
}

// opFunc is one op at off; its own buffers are the worker's.
type opFunc func(off uint64) error

// cell runs one cell: warm up, measure for Duration, stop.
func (b *bench) cell(system, op string, clients, depth, cell, cells int) (Result, error) {
	n := clients * depth
	fns := make([]opFunc, n)
	var cleanup []func()
	defer func() {
		for _, f := range cleanup {
			f()
		}
	}()
	switch system {
	case "service":
		for ci := range clients {
			c, err := b.dial()
			if err != nil {
				return Result{}, err
			}
			cleanup = append(cleanup, func() { c.Close() })
			for d := range depth {
				fns[ci*depth+d] = b.serviceOp(c, op, b.files[ci])
			}
		}
	case "store":
		for i := range n {
			fns[i] = b.storeOp(op, store.Ino(b.files[i/depth]))
		}
	case "echo":
		sz := b.sizes[op]
		for ci := range clients {
			e, err := dialEcho(b.echoSock)
			if err != nil {
				return Result{}, err
			}
			cleanup = append(cleanup, e.close)
			if depth > 1 {
				e.start()
			}
			for d := range depth {
				req := echoRequest(sz[0], sz[1])
				if depth == 1 {
					fns[ci*depth+d] = func(uint64) error { return e.call(req) }
				} else {
					ch := make(chan error, 1)
					fns[ci*depth+d] = func(uint64) error { return e.callPipelined(req, ch) }
				}
			}
		}
	}

	const (
		warming = iota
		measuring
		stopped
	)
	var state atomic.Int32
	workers := make([]*worker, n)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	blocks := uint64(b.cfg.FileSize) / uint64(b.cfg.BS)
	for i := range n {
		w := &worker{lat: make([]uint32, 0, 4096)}
		workers[i] = w
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			rng := rand.New(rand.NewPCG(b.cfg.Seed, uint64(cell)<<32|uint64(i)))
			fn := fns[i]
			ready.Done()
			<-start
			for {
				s := state.Load()
				if s == stopped {
					return
				}
				off := rng.Uint64N(blocks) * uint64(b.cfg.BS)
				t0 := time.Now()
				if err := fn(off); err != nil {
					w.err = err
					state.Store(stopped)
					return
				}
				// An op counts when it completes inside the window, even if it
				// began during warm-up: a window shorter than one slow op
				// (a commit under -race on 2 cores) must still see it.
				if s == measuring || state.Load() == measuring {
					w.lat = append(w.lat, uint32(min(time.Since(t0), math.MaxUint32)))
					w.ops.Add(1)
				}
			}
		}()
	}
	ready.Wait()
	close(start)
	time.Sleep(b.cfg.Warmup)
	if !state.CompareAndSwap(warming, measuring) {
		done.Wait()
		return Result{}, firstErr(workers)
	}
	t0 := time.Now()
	prog := func(el time.Duration) {
		if b.cfg.Progress == nil {
			return
		}
		ops := totalOps(workers)
		b.cfg.Progress(Progress{Cell: cell, Cells: cells, System: system, Op: op, Clients: clients, Depth: depth,
			Elapsed: el, Duration: b.cfg.Duration, Ops: ops})
	}
	tick := time.NewTicker(200 * time.Millisecond)
	end := time.NewTimer(b.cfg.Duration)
wait:
	for {
		select {
		case <-tick.C:
			if state.Load() == stopped {
				break wait
			}
			prog(time.Since(t0))
		case <-end.C:
			// The window lasts Duration and until one op has completed: a
			// cell with no op measured has no latency to report.
			if totalOps(workers) > 0 || state.Load() == stopped {
				break wait
			}
			end.Reset(time.Millisecond)
		}
	}
	tick.Stop()
	end.Stop()
	state.Store(stopped)
	elapsed := time.Since(t0)
	done.Wait()
	if err := firstErr(workers); err != nil {
		return Result{}, err
	}
	prog(elapsed)
	return result(system, op, clients, depth, elapsed, workers), nil
}

func totalOps(ws []*worker) int64 {
	var ops int64
	for _, w := range ws {
		ops += w.ops.Load()
	}
	return ops
}

func firstErr(ws []*worker) error {
	for _, w := range ws {
		if w.err != nil {
			return w.err
		}
	}
	return nil
}

func (b *bench) serviceOp(c *client.Client, op string, ino uint64) opFunc {
	ctx := b.ctx
	bs := b.cfg.BS
	switch op {
	case "write":
		data := pattern(bs, uint64(ino))
		return func(off uint64) error {
			_, err := c.Write(ctx, ino, off, data)
			return err
		}
	case "read":
		buf := make([]byte, bs)
		return func(off uint64) error {
			n, err := c.Read(ctx, ino, off, buf)
			if err == nil && n != bs {
				err = fmt.Errorf("read %d bytes at %d, want %d", n, off, bs)
			}
			return err
		}
	default:
		return func(uint64) error {
			_, err := c.Stat(ctx, ino)
			return err
		}
	}
}

func (b *bench) storeOp(op string, ino store.Ino) opFunc {
	st := b.st
	bs := b.cfg.BS
	switch op {
	case "write":
		data := pattern(bs, uint64(ino))
		return func(off uint64) error {
			_, err := st.Write(ino, off, data)
			return err
		}
	case "read":
		buf := make([]byte, bs)
		return func(off uint64) error {
			n, err := st.Read(ino, off, buf)
			if err == nil && n != bs {
				err = fmt.Errorf("read %d bytes at %d, want %d", n, off, bs)
			}
			return err
		}
	default:
		return func(uint64) error {
			_, err := st.Stat(ino)
			return err
		}
	}
}

// pattern is n pseudo-random bytes.
func pattern(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for k := range 8 {
			b[i+k] = byte(v >> (8 * k))
		}
	}
	return b
}
