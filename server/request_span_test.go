package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"

	"ustore/client"
	"ustore/proto"
	"ustore/trace"
)

// TestServer_RequestSpan_AttrsAndStatus: request spans name what each
// request is about (inode, directory entry, path, offset and length) and
// the inode a reply answered; a failed request carries its status, and
// only a failure of the server marks the span failed — the ENOENT of a
// lookup (the probe of 'mkdir -p') is an answer, EIO an error.
func TestServer_RequestSpan_AttrsAndStatus(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	restore := trace.UseTracerProvider(tp)
	defer restore()

	ts := newStoreServer(t)
	c := dial(t, ts.sock)
	ctx := context.Background()
	if _, err := c.Lookup(ctx, client.RootIno, "a"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("lookup of a missing name: %v", err)
	}
	a, err := c.Mkdir(ctx, client.RootIno, "a", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mkdir(ctx, client.RootIno, "a", 0o755); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second mkdir: %v", err)
	}
	f, err := c.Create(ctx, a.Ino, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(ctx, f.Ino, 4096, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := c.Rename(ctx, a.Ino, "f", client.RootIno, "g"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Resolve(ctx, "/g"); err != nil {
		t.Fatal(err)
	}
	// A failure of the server: the filter answers EIO, as a device
	// error would.
	filter := func(_ context.Context, req proto.Request) error {
		if _, ok := req.(*proto.Fsync); ok {
			return &fs.PathError{Op: "fsync", Path: "g", Err: syscall.EIO}
		}
		return nil
	}
	ts.testFilter.Store(&filter)
	if err := c.Fsync(ctx, f.Ino, false); !errors.Is(err, syscall.EIO) {
		t.Fatalf("fsync with the filter: %v", err)
	}

	var got []string
	for _, s := range rec.Ended() {
		if !strings.HasPrefix(s.Name(), "ustore.") {
			continue
		}
		var kv []string
		for _, a := range s.Attributes() {
			if a.Key != "ustore.op" {
				kv = append(kv, fmt.Sprintf("%s=%s", a.Key, a.Value.String()))
			}
		}
		sort.Strings(kv)
		line := s.Name() + " " + strings.Join(kv, " ")
		if s.Status().Code == codes.Error {
			line += " ERROR"
		}
		got = append(got, line)
	}
	want := []string{
		fmt.Sprintf("ustore.lookup ustore.dir=%d ustore.name=a ustore.status=ENOENT", client.RootIno),
		fmt.Sprintf("ustore.mkdir ustore.dir=%d ustore.ino=%d ustore.name=a", client.RootIno, a.Ino),
		fmt.Sprintf("ustore.mkdir ustore.dir=%d ustore.name=a ustore.status=EEXIST", client.RootIno),
		fmt.Sprintf("ustore.create ustore.dir=%d ustore.ino=%d ustore.name=f", a.Ino, f.Ino),
		fmt.Sprintf("ustore.write ustore.bytes=5 ustore.ino=%d ustore.offset=4096", f.Ino),
		fmt.Sprintf("ustore.rename ustore.dir=%d ustore.name=f ustore.new_dir=%d ustore.new_name=g", a.Ino, client.RootIno),
		fmt.Sprintf("ustore.resolve ustore.ino=%d ustore.path=/g", f.Ino),
		fmt.Sprintf("ustore.fsync ustore.ino=%d ustore.status=EIO ERROR", f.Ino),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("request spans:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestIsAnswer_Statuses: every status is classified, and the ones a
// store failure produces are failures.
func TestIsAnswer_Statuses(t *testing.T) {
	for _, s := range []proto.Status{proto.StatusIO, proto.StatusNoSpace, proto.StatusReadOnly,
		proto.StatusTimedOut, proto.StatusCanceled, proto.StatusShutdown, proto.StatusBadMessage, proto.StatusOverflow} {
		if isAnswer(s) {
			t.Errorf("%v is an answer, want a failure", s)
		}
	}
	for _, s := range []proto.Status{proto.StatusNotExist, proto.StatusExist, proto.StatusNotDir, proto.StatusNotEmpty, proto.StatusInvalid} {
		if !isAnswer(s) {
			t.Errorf("%v is a failure, want an answer", s)
		}
	}
}

// TestServer_RequestSpan_Unsampled: with the server's default sampler at
// ratio 0, a request without a traceparent runs under no recording span
// (the hook sees none, the recorder gets none), and neither does one under
// a client's unsampled span; a request under a client's sampled span is
// kept whatever the ratio, as the child of the client's span.
func TestServer_RequestSpan_Unsampled(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp, use := trace.NewTracerProvider(trace.Sampling{Name: trace.SamplerParentBasedTraceIDRatio, Ratio: 0},
		sdktrace.WithSpanProcessor(rec))
	defer use()()
	defer tp.Shutdown(context.Background())

	var mu sync.Mutex
	recording := map[proto.Op]bool{}
	st, _ := newTestStore(t)
	ts := startServer(t, st, Options{}, func(ctx context.Context, req proto.Request) {
		mu.Lock()
		defer mu.Unlock()
		recording[req.Op()] = trace.SpanFromContext(ctx).IsRecording()
	})
	c := dial(t, ts.sock)
	ctx := context.Background()
	a, err := c.Create(ctx, client.RootIno, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	sc := oteltrace.NewSpanContext(oteltrace.SpanContextConfig{
		TraceID: oteltrace.TraceID{0xa1}, SpanID: oteltrace.SpanID{0xb2}, Remote: true,
	})
	if _, err := c.Write(oteltrace.ContextWithSpanContext(ctx, sc), a.Ino, 0, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Started()); n != 0 {
		t.Fatalf("%d spans recorded for unsampled requests", n)
	}
	sampled := oteltrace.ContextWithSpanContext(ctx, sc.WithTraceFlags(oteltrace.FlagsSampled))
	if _, err := c.Stat(sampled, a.Ino); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if recording[proto.OpCreate] || recording[proto.OpWrite] || !recording[proto.OpStat] {
		t.Errorf("recording spans by op: %v, want only stat's", recording)
	}
	mu.Unlock()
	spans := rec.Ended()
	if len(spans) != 1 || spans[0].Name() != "ustore.stat" || spans[0].Parent().SpanID() != sc.SpanID() {
		t.Fatalf("recorded %d spans, want the one ustore.stat under the client's span", len(spans))
	}
}
