package servicebench

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"ustore/bench/layout"
	"ustore/dev"
	"ustore/dev/devopen"
	"ustore/server"
	"ustore/store"
)

// TestDecompose_Read breaks the service's 4 KiB read at depth 1 (one
// client) into its parts, for docs/BENCHMARKS.md: it serves the same read
// of the same store several ways, from the cheapest to the real service,
// and times the device reads under each:
//
//	store        st.Read in a loop, in process
//	echo         the echo floor (no work)
//	inline       an echo server that does st.Read on its connection's
//	             goroutine before answering: the least a served read costs
//	go+write     a goroutine per request, which does st.Read and writes the
//	             response itself (under a mutex)
//	go+writer    a goroutine per request handing its response to a writer
//	             goroutine: the server's structure
//	service      client.Client to server.Server: the server's structure
//	             plus the client's reader goroutine and the protocol
//
// The three echo-protocol servers are driven by the synchronous echo
// client. It runs only with USTORE_BENCH_DECOMPOSE=1 (about 30 s), on a
// 256 MiB file laid out in a temporary directory, or $USTORE_BENCH_FILE.
func TestDecompose_Read(t *testing.T) {
	if os.Getenv("USTORE_BENCH_DECOMPOSE") == "" {
		t.Skip("USTORE_BENCH_DECOMPOSE=1 runs it")
	}
	file := os.Getenv("USTORE_BENCH_FILE")
	if file == "" {
		file = filepath.Join(t.TempDir(), "dev.img")
	}
	cfg := Config{File: file, Size: 256 << 20, Ops: []string{"read"}, Clients: []int{1}, Depths: []int{1},
		Duration: 2 * time.Second, Logger: slog.New(slog.DiscardHandler)}.withDefaults()
	b := &bench{cfg: cfg, ctx: context.Background(), tmpDir: t.TempDir()}
	var err error
	if b.sizes, err = frameSizes(cfg.BS); err != nil {
		t.Fatal(err)
	}
	if _, err := layout.File(file, cfg.Size, func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	d, _, err := devopen.Open(file, devopen.Options{Logger: cfg.Logger})
	if err != nil {
		t.Fatal(err)
	}
	td := &timedDevice{Device: d}
	b.dev = td
	if err := store.Mkfs(td, store.MkfsOptions{}); err != nil {
		t.Fatal(err)
	}
	if b.st, err = store.Open(td, store.Options{Logger: cfg.Logger}); err != nil {
		t.Fatal(err)
	}
	b.sock = filepath.Join(b.tmpDir, "s.sock")
	if b.srv, err = server.New(b.st, server.Options{Socket: b.sock, Logger: cfg.Logger}); err != nil {
		t.Fatal(err)
	}
	b.served = make(chan error, 1)
	go func() { b.served <- b.srv.Serve(context.Background()) }()
	defer b.close()
	if err := b.filesInProcess(1); err != nil {
		t.Fatal(err)
	}
	b.echoSock = filepath.Join(b.tmpDir, "echo.sock")
	if b.echo, err = startEcho(b.echoSock); err != nil {
		t.Fatal(err)
	}
	socks := map[string]string{"echo": b.echoSock}
	for _, mode := range []string{"inline", "go+write", "go+writer"} {
		socks[mode] = filepath.Join(b.tmpDir, mode+".sock")
		ln, err := net.Listen("unix", socks[mode])
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go serveReads(ln, b.st, store.Ino(b.files[0]), mode)
	}
	order := []string{"store", "echo", "inline", "go+write", "go+writer", "service"}
	p50 := map[string][]float64{}
	dev50 := map[string][]float64{}
	for range 2 {
		for _, v := range order {
			sys := v
			if s, ok := socks[v]; ok {
				b.echoSock, sys = s, "echo"
			}
			td.take()
			r, err := b.cell(sys, "read", 1, 1, 1, 1)
			if err != nil {
				t.Fatalf("%s: %v", v, err)
			}
			p50[v] = append(p50[v], r.P50US)
			dev50[v] = append(dev50[v], td.take())
		}
	}
	mid := func(xs []float64) float64 { slices.Sort(xs); return (xs[0] + xs[len(xs)-1]) / 2 }
	for _, v := range order {
		t.Logf("%-10s p50 %6.1f µs   device read p50 %5.1f µs", v, mid(p50[v]), mid(dev50[v]))
	}
}

// serveReads serves the echo protocol, doing a 4 KiB st.Read of ino for
// each request as mode says.
func serveReads(ln net.Listener, st *store.Store, ino store.Ino, mode string) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer nc.Close()
			br := bufio.NewReaderSize(nc, echoBufferSize)
			bw := bufio.NewWriterSize(nc, echoBufferSize)
			var wmu sync.Mutex
			out := make(chan []byte, 16)
			defer close(out)
			if mode == "go+writer" {
				go func() {
					for r := range out {
						bw.Write(r)
						if len(out) == 0 {
							bw.Flush()
						}
					}
				}()
			}
			rng := rand.New(rand.NewPCG(1, 2))
			hdr := make([]byte, echoSizeMax)
			for {
				if _, err := io.ReadFull(br, hdr[:echoHeader]); err != nil {
					return
				}
				reqLen := binary.LittleEndian.Uint32(hdr)
				respLen := binary.LittleEndian.Uint32(hdr[4:])
				if _, err := io.ReadFull(br, hdr[echoHeader:reqLen]); err != nil {
					return
				}
				off := rng.Uint64N(1024) * 4096
				work := func() {
					resp := make([]byte, max(int(respLen), 64+4096))
					if _, err := st.Read(ino, off, resp[64:64+4096]); err != nil {
						panic(err)
					}
					binary.LittleEndian.PutUint32(resp, respLen)
					switch mode {
					case "inline":
						bw.Write(resp[:respLen])
						if br.Buffered() == 0 {
							bw.Flush()
						}
					case "go+write":
						wmu.Lock()
						bw.Write(resp[:respLen])
						bw.Flush()
						wmu.Unlock()
					default:
						out <- resp[:respLen]
					}
				}
				if mode == "inline" {
					work()
				} else {
					go work()
				}
			}
		}()
	}
}

// timedDevice times its reads.
type timedDevice struct {
	dev.Device
	mu  sync.Mutex
	lat []time.Duration
}

func (d *timedDevice) Read(ios []dev.IO) error {
	t0 := time.Now()
	err := d.Device.Read(ios)
	el := time.Since(t0)
	d.mu.Lock()
	d.lat = append(d.lat, el)
	d.mu.Unlock()
	return err
}

// take returns the median read time since the last take, in µs.
func (d *timedDevice) take() float64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.lat
	d.lat = nil
	if len(l) == 0 {
		return 0
	}
	slices.Sort(l)
	return float64(l[len(l)/2]) / 1e3
}
