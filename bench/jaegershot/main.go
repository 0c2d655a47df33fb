// Command jaegershot drives a small traced workload against a running
// `ustore serve`, for bench/jaeger-screenshot.sh: under a client span
// "client.work" (service "ustore-client", exported over OTLP/HTTP) it
// creates a file, writes 64 KiB, fsyncs it, creates a second file, writes
// 4 KiB and syncs — the same workload as cmd/ustore's
// TestCommand_Serve_Tracing_Jaeger — then flushes its exporter and prints
// the trace ID on stdout.
//
//	go run ./bench/jaegershot --socket ustore-data/ustore.sock --otlp-endpoint 127.0.0.1:4318
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"ustore/client"
	"ustore/trace"
)

func main() {
	socket := flag.String("socket", "ustore-data/ustore.sock", "the server's Unix socket")
	endpoint := flag.String("otlp-endpoint", "127.0.0.1:4318", "OTLP/HTTP endpoint (host:port or URL) the client's span goes to")
	service := flag.String("service", "ustore-client", "the client's service.name")
	name := flag.String("name", "traced.dat", "name of the first file (in the root directory); the second is <name>.2")
	flag.Parse()
	id, err := run(*socket, *endpoint, *service, *name)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jaegershot:", err)
		os.Exit(1)
	}
	fmt.Println(id)
}

func run(socket, endpoint, service, name string) (traceID string, err error) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	shutdown, err := trace.Setup(ctx, trace.Config{Endpoint: endpoint, ServiceName: service, DefaultSampling: trace.SampleAll, Logger: log})
	if err != nil {
		return "", err
	}
	defer func() {
		// Shutdown flushes the batch: the client span is in the
		// collector once it returned.
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if serr := shutdown(sctx); serr != nil && err == nil {
			err = fmt.Errorf("flushing spans: %w", serr)
		}
	}()
	if !trace.Enabled() {
		return "", fmt.Errorf("tracing is off (OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none?)")
	}
	c, err := client.Dial(ctx, socket)
	if err != nil {
		return "", err
	}
	defer c.Close()

	wctx, span := trace.Start(ctx, "client.work")
	defer span.End()
	data := bytes.Repeat([]byte("traced "), 64<<10/7+1)[:64<<10]
	f, err := c.Create(wctx, client.RootIno, name, 0o644)
	if err != nil {
		return "", err
	}
	if _, err := c.Write(wctx, f.Ino, 0, data); err != nil {
		return "", err
	}
	if err := c.Fsync(wctx, f.Ino, false); err != nil {
		return "", err
	}
	g, err := c.Create(wctx, client.RootIno, name+".2", 0o644)
	if err != nil {
		return "", err
	}
	if _, err := c.Write(wctx, g.Ino, 0, data[:4096]); err != nil {
		return "", err
	}
	if err := c.Sync(wctx); err != nil {
		return "", err
	}
	return span.TraceID(), nil
}
