package trace

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// useRecorder makes Start record into a span recorder for the test.
func useRecorder(t *testing.T) *tracetest.SpanRecorder {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	restore := UseTracerProvider(tp)
	t.Cleanup(func() {
		restore()
		_ = tp.Shutdown(context.Background())
	})
	return rec
}

// TestStart_Off_NoAllocs proves Invariant 5: with tracing off a span —
// start with attributes, annotate, end — allocates nothing and returns the
// caller's context.
func TestStart_Off_NoAllocs(t *testing.T) {
	if Enabled() {
		t.Fatal("a tracer is installed")
	}
	ctx := context.Background()
	boom := errors.New("boom")
	allocs := testing.AllocsPerRun(1000, func() {
		c, s := Start(ctx, "ustore.write", Ino(7), Bytes(4096))
		s.SetAttributes(Transid(3))
		s.AddEvent("retry", Nodes(2))
		s.RecordError(boom)
		s.End()
		if c != ctx || s.IsRecording() || s.Key() != 0 || s.TraceID() != "" {
			t.Fatal("zero Span not inert")
		}
		_ = ContextWithRemoteParent(ctx, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
		_ = SpanFromContext(ctx)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per span with tracing off, want 0", allocs)
	}
}

// TestStart_Tree_ParentsAndAttributes: children of a span started with
// Start have it as parent, and attributes given to Start, SetAttributes and
// AddEvent are all recorded.
func TestStart_Tree_ParentsAndAttributes(t *testing.T) {
	rec := useRecorder(t)
	if !Enabled() {
		t.Fatal("Enabled false with a provider installed")
	}
	ctx, root := Start(context.Background(), "ustore.fsync", Ino(257), Op("fsync"))
	_, log := Start(ctx, "logtree.sync_log", Contexts(3))
	log.AddEvent("joined", Transid(9))
	log.End()
	_, commit := Start(ctx, "journal.commit", Transid(10), Nodes(12))
	commit.SetAttributes(BatchSize(5))
	commit.RecordError(errors.New("boom"))
	commit.End()
	if got := SpanFromContext(ctx); got.Key() != root.Key() || got.Key() == 0 {
		t.Fatalf("SpanFromContext key %#x, want the root's %#x", got.Key(), root.Key())
	}
	root.End()

	spans := rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans ended, want 3", len(spans))
	}
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byName[s.Name()] = s
	}
	r := byName["ustore.fsync"]
	for _, name := range []string{"logtree.sync_log", "journal.commit"} {
		s := byName[name]
		if s == nil || s.Parent().SpanID() != r.SpanContext().SpanID() || s.SpanContext().TraceID() != r.SpanContext().TraceID() {
			t.Fatalf("%s is not a child of ustore.fsync", name)
		}
	}
	wantAttrs(t, r.Attributes(), map[attribute.Key]string{"ustore.ino": "257", "ustore.op": "fsync"})
	wantAttrs(t, byName["journal.commit"].Attributes(), map[attribute.Key]string{
		"ustore.transid": "10", "ustore.nodes": "12", "ustore.batch_size": "5"})
	ev := byName["logtree.sync_log"].Events()
	if len(ev) != 1 || ev[0].Name != "joined" {
		t.Fatalf("events %v, want one 'joined'", ev)
	}
	wantAttrs(t, ev[0].Attributes, map[attribute.Key]string{"ustore.transid": "9"})
	if st := byName["journal.commit"].Status(); st.Description != "boom" {
		t.Fatalf("commit status %+v, want the error", st)
	}
}

func wantAttrs(t *testing.T, got []attribute.KeyValue, want map[attribute.Key]string) {
	t.Helper()
	m := map[attribute.Key]string{}
	for _, kv := range got {
		m[kv.Key] = kv.Value.String()
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("attribute %s = %q, want %q (all: %v)", k, m[k], v, m)
		}
	}
}

// TestTraceparent_RoundTrip: what a client sends with Traceparent, a server
// continues with ContextWithRemoteParent — same trace, client's span as
// parent.
func TestTraceparent_RoundTrip(t *testing.T) {
	rec := useRecorder(t)
	cctx, client := Start(context.Background(), "client.write")
	h := Traceparent(cctx)
	if len(h) != traceparentLen || h[len(h)-2:] != "01" {
		t.Fatalf("traceparent %q", h)
	}
	sctx := ContextWithRemoteParent(context.Background(), h)
	_, server := Start(sctx, "ustore.write")
	server.End()
	client.End()
	s := rec.Ended()[0]
	if s.Name() != "ustore.write" || !s.Parent().IsRemote() ||
		s.Parent().SpanID() != client.s.SpanContext().SpanID() || s.SpanContext().TraceID().String() != client.TraceID() {
		t.Fatalf("server span %s parent %v, want remote child of the client's span", s.Name(), s.Parent())
	}
	if Traceparent(context.Background()) != "" {
		t.Fatal("Traceparent of a context without a span is not empty")
	}
}

// TestParseTraceparent_Cases checks the parser against the W3C rules and
// against OpenTelemetry's own propagator (which the server does not use, to
// avoid its map allocation).
func TestParseTraceparent_Cases(t *testing.T) {
	const ok = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, c := range []struct {
		h     string
		valid bool
	}{
		{ok, true},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", true},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03", true}, // level 2 "random" flag
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", true},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", false},
		{"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false},
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0", false},
		{"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01", false},
		{"", false},
	} {
		sc, valid := parseTraceparent(c.h)
		if valid != c.valid {
			t.Errorf("%q: valid %v, want %v", c.h, valid, c.valid)
			continue
		}
		ref := oteltrace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(),
			propagation.MapCarrier{"traceparent": c.h}))
		if ref.IsValid() != valid || (valid && (ref.TraceID() != sc.TraceID() || ref.SpanID() != sc.SpanID() ||
			ref.TraceFlags() != sc.TraceFlags() || !sc.IsRemote())) {
			t.Errorf("%q: parsed %v, OpenTelemetry's propagator %v", c.h, sc, ref)
		}
	}
}

// BenchmarkStart_Off is what a span costs where tracing is off (no
// endpoint): Start with two attributes, then End.
func BenchmarkStart_Off(b *testing.B) {
	if tracer.Load() != nil {
		b.Fatal("a tracer is installed")
	}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_, s := Start(ctx, "ustore.write", Ino(uint64(i)), Bytes(4096))
		s.End()
	}
}

// BenchmarkStart_OffNoAttrs is Start and End alone with tracing off: the
// part of BenchmarkStart_Off that is not the caller building its attributes.
func BenchmarkStart_OffNoAttrs(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, s := Start(ctx, "ustore.write")
		s.End()
	}
}

// BenchmarkStart_Sampled is the same span with tracing on and a batch
// processor whose exporter discards: the cost of a recorded span.
func BenchmarkStart_Sampled(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	defer UseTracerProvider(tp)()
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_, s := Start(ctx, "ustore.write", Ino(uint64(i)), Bytes(4096))
		s.End()
	}
}

// BenchmarkTraceparent_RoundTrip is a client's Traceparent plus a server's
// ContextWithRemoteParent, tracing on.
func BenchmarkTraceparent_RoundTrip(b *testing.B) {
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	defer UseTracerProvider(tp)()
	ctx, s := Start(context.Background(), "client")
	defer s.End()
	b.ReportAllocs()
	for b.Loop() {
		_ = ContextWithRemoteParent(context.Background(), Traceparent(ctx))
	}
}
