package trace_test

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"ustore/internal/jaegertest"
	"ustore/trace"
)

// TestSetup_Jaeger_SpanTree exports a small span tree through Setup to a
// real Jaeger and reads it back through Jaeger's query API: the tree (a
// client span carried over a W3C traceparent, the request span, its
// children and grandchildren), the attributes, the event and the service
// name all arrive as they were made.
func TestSetup_Jaeger_SpanTree(t *testing.T) {
	j := jaegertest.Start(t)
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "OTEL_") {
			t.Setenv(k, "")
		}
	}
	ctx := context.Background()
	shutdown, err := trace.Setup(ctx, trace.Config{
		Endpoint: j.OTLPEndpoint(),
		// The client's root span is made here: keep it whatever the
		// default ratio.
		DefaultSampling: trace.SampleAll,
		Logger:          slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = shutdown(ctx) }()
	began := time.Now()

	// The client side: a span, and its traceparent on the wire.
	cctx, client := trace.Start(ctx, "client.fsync")
	wire := trace.Traceparent(cctx)

	// The server side continues the client's trace.
	sctx := trace.ContextWithRemoteParent(ctx, wire)
	sctx, req := trace.Start(sctx, "ustore.fsync", trace.Op("fsync"), trace.Ino(257))
	_, logSync := trace.Start(sctx, "logtree.sync_log", trace.Contexts(3))
	logSync.AddEvent("lock.wait", trace.Nodes(1))
	logSync.End()
	commitCtx, commit := trace.Start(sctx, "journal.commit", trace.Transid(42))
	phases := []string{"write_data", "write_nodes", "flush", "super"}
	for _, p := range phases {
		_, ps := trace.Start(commitCtx, "journal.commit."+p, trace.Phase(p))
		time.Sleep(time.Millisecond) // distinct start times, so the order is certain
		ps.End()
	}
	commit.SetAttributes(trace.Nodes(17), trace.Bytes(69632))
	commit.End()
	req.End()
	client.End()
	traceID := client.TraceID()

	// Shutdown flushes: everything is in Jaeger once it returned.
	if err := shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tr, err := j.WaitTrace(wctx, traceID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", tr)

	if len(tr.Spans) != 8 {
		t.Fatalf("%d spans, want 8:\n%s", len(tr.Spans), tr)
	}
	root := tr.Root()
	if root == nil || root.Name != "client.fsync" || len(root.Children) != 1 {
		t.Fatalf("root is not client.fsync with one child:\n%s", tr)
	}
	r := root.Children[0]
	wantSpan(t, r, "ustore.fsync", map[string]string{"ustore.op": "fsync", "ustore.ino": "257"})
	if r.Service != "ustore" {
		t.Errorf("service %q, want ustore", r.Service)
	}
	if len(r.Children) != 2 {
		t.Fatalf("ustore.fsync has %d children, want 2:\n%s", len(r.Children), tr)
	}
	ls, c := r.Children[0], r.Children[1]
	wantSpan(t, ls, "logtree.sync_log", map[string]string{"ustore.contexts": "3"})
	if len(ls.Events) != 1 || ls.Events[0].Name != "lock.wait" || ls.Events[0].Attributes["ustore.nodes"] != "1" {
		t.Errorf("logtree.sync_log events %+v, want one lock.wait with ustore.nodes=1", ls.Events)
	}
	wantSpan(t, c, "journal.commit", map[string]string{"ustore.transid": "42", "ustore.nodes": "17", "ustore.bytes": "69632"})
	if len(c.Children) != len(phases) {
		t.Fatalf("journal.commit has %d children, want %d:\n%s", len(c.Children), len(phases), tr)
	}
	for i, p := range phases {
		wantSpan(t, c.Children[i], "journal.commit."+p, map[string]string{"ustore.phase": p})
		if ch := c.Children[i]; ch.Start.Before(c.Start) || ch.End.After(c.End) {
			t.Errorf("%s [%v, %v] outside its parent [%v, %v]", ch.Name, ch.Start, ch.End, c.Start, c.End)
		}
	}

	// The search by service and time finds the same trace.
	traces, err := j.Traces(wctx, "ustore", began.Add(-time.Minute), time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(traces) != 1 || traces[0].ID != traceID || len(traces[0].Spans) != 8 {
		t.Fatalf("Traces found %d traces, want this one with its 8 spans", len(traces))
	}
	if none, err := j.Traces(wctx, "no-such-service", began.Add(-time.Minute), time.Now()); err != nil || len(none) != 0 {
		t.Fatalf("Traces of an unknown service: %d traces, %v; want none, no error", len(none), err)
	}
}

func wantSpan(t *testing.T, s *jaegertest.Span, name string, attrs map[string]string) {
	t.Helper()
	if s.Name != name {
		t.Errorf("span %q, want %q", s.Name, name)
	}
	for k, v := range attrs {
		if s.Attributes[k] != v {
			t.Errorf("%s: %s = %q, want %q (all: %v)", name, k, s.Attributes[k], v, s.Attributes)
		}
	}
}
