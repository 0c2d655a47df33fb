package main

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"ustore/client"
	"ustore/internal/jaegertest"
)

// TestCommand_Serve_Tracing_Jaeger runs a real `ustore serve` exporting to
// a real Jaeger, drives it through the Go client under a span of the test's
// own tracer provider (another process, another service name), and reads
// the trace back from Jaeger's query API: one trace, from the client's span
// through the request spans down to the commit phases, with the attributes
// docs/TRACING.md promises; and the histograms on --metrics-addr count the
// same requests and commits.
//
//	client.work                       (service ustore-test-client)
//	├── ustore.create                 (service ustore, from here down)
//	├── ustore.write
//	├── ustore.fsync
//	│   └── store.fsync               ino, outcome=commit, transid T
//	│       ├── write_data            ino, bytes
//	│       └── journal.commit        transid T, nodes, bytes
//	│           └── update_roots, write_nodes (nodes, bytes), flush, super
//	├── ustore.create
//	├── ustore.write
//	└── ustore.sync
//	    └── store.sync
//	        ├── write_data
//	        └── journal.commit        transid T+1
//	            └── update_roots, write_nodes, flush, super
//
// Deterministic by construction: with --commit-interval 5m no periodic
// commit runs, so the fsync's CommitNow is the first (and only) trigger of
// its transaction and the journal commits it under the fsync's context;
// the second file opens the next transaction, which the sync commits.
func TestCommand_Serve_Tracing_Jaeger(t *testing.T) {
	j := jaegertest.Start(t)
	// Neither this process's exporter nor the server's may be steered by
	// the environment (Jaeger itself is started without OTEL_*).
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "OTEL_") {
			t.Setenv(k, "")
		}
	}
	bin := buildUstore(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	p := startServe(t, bin, "--device", filepath.Join(dir, "d.img"), "--size", "256M", "--socket", sock,
		"--otlp-endpoint", j.OTLPEndpoint(), "--metrics-addr", "127.0.0.1:0", "--commit-interval", "5m")
	p.waitLog(t, "trace: exporting spans over OTLP/HTTP")
	metricsURL := p.metricsURL(t)
	before := traceScrape(t, metricsURL) // formatting and mounting may have committed

	// The client side: an SDK tracer provider of its own, exporting to the
	// same Jaeger under another service name. The client sends the
	// traceparent of whatever OpenTelemetry span its ctx carries.
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(j.OTLPEndpoint()+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "ustore-test-client"))))
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_ = tp.Shutdown(sctx)
	}()
	c, err := client.Dial(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	wctx, work := tp.Tracer("ustore/cmd/ustore").Start(ctx, "client.work")
	data := bytes.Repeat([]byte("traced "), 64<<10/7+1)[:64<<10] // 16 blocks
	f, err := c.Create(wctx, client.RootIno, "traced.dat", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(wctx, f.Ino, 0, data); err != nil {
		t.Fatal(err)
	}
	if err := c.Fsync(wctx, f.Ino, false); err != nil {
		t.Fatal(err)
	}
	g, err := c.Create(wctx, client.RootIno, "second.dat", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(wctx, g.Ino, 0, data[:4096]); err != nil {
		t.Fatal(err)
	}
	if err := c.Sync(wctx); err != nil {
		t.Fatal(err)
	}
	work.End()
	traceID := work.SpanContext().TraceID().String()

	// The histograms behind --metrics-addr saw the same requests.
	after := traceScrape(t, metricsURL)
	for series, want := range map[string]float64{
		`ustore_request_duration_seconds_count{op="fsync",status="ok"}`:  1,
		`ustore_request_duration_seconds_count{op="sync",status="ok"}`:   1,
		`ustore_request_duration_seconds_count{op="create",status="ok"}`: 2,
		`ustore_fsync_duration_seconds_count`:                            1,
		`ustore_log_sync_duration_seconds_count`:                         1,
		`ustore_log_sync_batch_size_count`:                               1,
		`ustore_commit_duration_seconds_count`:                           1,
		`ustore_commit_phase_duration_seconds_count{phase="super"}`:      1,
	} {
		if got, ok := after[series]; !ok || got-before[series] != want {
			t.Errorf("/metrics: %s went from %v to %v (present %v), want +%v", series, before[series], got, ok, want)
		}
	}

	// Flush both sides: the test's exporter now, the server's at its
	// graceful exit (SIGTERM; serve shuts its exporter down under a
	// deadline, which flushes the batch).
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := tp.ForceFlush(fctx); err != nil {
		t.Fatalf("client exporter flush: %v", err)
	}
	p.stop(t)
	qctx, qcancel := context.WithTimeout(ctx, 20*time.Second)
	defer qcancel()
	tr, err := j.WaitTrace(qctx, traceID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", tr)

	root := tr.Root()
	if root == nil || root.Name != "client.work" || root.Service != "ustore-test-client" {
		t.Fatalf("want one root, client.work of ustore-test-client; roots %d:\n%s", len(tr.Roots), tr)
	}
	var ops []string
	for _, s := range root.Children {
		ops = append(ops, s.Name)
		if s.Service != "ustore" {
			t.Errorf("%s: service %q, want ustore", s.Name, s.Service)
		}
		op := strings.TrimPrefix(s.Name, "ustore.")
		if s.Attributes["ustore.op"] != op {
			t.Errorf("%s: ustore.op = %q, want %q", s.Name, s.Attributes["ustore.op"], op)
		}
		if s.Status == "ERROR" {
			t.Errorf("%s: status ERROR: %s", s.Name, s.StatusMsg)
		}
	}
	wantOps := "ustore.create ustore.write ustore.fsync ustore.create ustore.write ustore.sync"
	if got := strings.Join(ops, " "); got != wantOps {
		t.Fatalf("client.work's children: %s\nwant %s\n%s", got, wantOps, tr)
	}

	// fsync: the request, the store's decision, the writeback, then the
	// inode logged and the log synced (a batch of one) — no commit.
	sfs := traceOnlyChild(t, tr, root.Children[2], "store.fsync")
	transid := sfs.Attributes["ustore.transid"]
	traceWantAttrs(t, sfs, map[string]string{"ustore.ino": strconv.FormatUint(f.Ino, 10), "datasync": "false", "outcome": "logged"})
	if n, err := strconv.ParseUint(transid, 10, 64); err != nil || n == 0 {
		t.Fatalf("store.fsync: ustore.transid = %q, want a transaction id\n%s", transid, tr)
	}
	if traceSpanNames(sfs.Children) != "write_data logtree.log_inode logtree.sync_log" {
		t.Fatalf("store.fsync's children: %s, want write_data logtree.log_inode logtree.sync_log\n%s", traceSpanNames(sfs.Children), tr)
	}
	traceWantAttrs(t, sfs.Children[0], map[string]string{"ustore.ino": strconv.FormatUint(f.Ino, 10), "ustore.bytes": strconv.Itoa(len(data))})
	traceWantAttrs(t, sfs.Children[1], map[string]string{"ustore.ino": strconv.FormatUint(f.Ino, 10)})
	traceWantAttrs(t, sfs.Children[2], map[string]string{"ustore.transid": transid, "ustore.batch_size": "1", "ustore.log_sync_role": "committer"})

	// sync: every dirty inode written back (the second file's block), then
	// the next transaction committed under the sync's span.
	ss := traceOnlyChild(t, tr, root.Children[5], "store.sync")
	if traceSpanNames(ss.Children) != "write_data journal.commit" {
		t.Fatalf("store.sync's children: %s, want write_data journal.commit\n%s", traceSpanNames(ss.Children), tr)
	}
	traceWantAttrs(t, ss.Children[0], map[string]string{"ustore.ino": strconv.FormatUint(g.Ino, 10), "ustore.bytes": "4096"})
	// The transaction the fsync logged in is the one the sync commits.
	traceCheckCommit(t, tr, ss.Children[1], transid)

	// Server spans nest in time inside their parents (one clock, one
	// machine); the client's span holds every request.
	for _, s := range tr.Spans {
		if s.Parent != nil && (s.Start.Before(s.Parent.Start) || s.End.After(s.Parent.End)) {
			t.Errorf("%s [%v, %v] outside its parent %s [%v, %v]", s.Name, s.Start, s.End, s.Parent.Name, s.Parent.Start, s.Parent.End)
		}
	}
}

// traceCheckCommit checks a journal.commit span: its transaction, its
// phases in order, and the node count and bytes on both write_nodes and
// the commit.
func traceCheckCommit(t *testing.T, tr *jaegertest.Trace, c *jaegertest.Span, transid string) {
	t.Helper()
	if c.Name != "journal.commit" || c.Attributes["ustore.transid"] != transid {
		t.Fatalf("%s transid %q, want journal.commit of transaction %s\n%s", c.Name, c.Attributes["ustore.transid"], transid, tr)
	}
	if got := traceSpanNames(c.Children); got != "update_roots write_nodes flush super" {
		t.Fatalf("journal.commit %s phases: %s, want update_roots write_nodes flush super\n%s", transid, got, tr)
	}
	wn := c.Children[1]
	nodes, _ := strconv.Atoi(wn.Attributes["ustore.nodes"])
	nbytes, _ := strconv.Atoi(wn.Attributes["ustore.bytes"])
	if nodes <= 0 || nbytes < nodes*4096 {
		t.Errorf("write_nodes of %s: ustore.nodes = %q, ustore.bytes = %q: want nodes > 0 and bytes ≥ nodes × 4096",
			transid, wn.Attributes["ustore.nodes"], wn.Attributes["ustore.bytes"])
	}
	traceWantAttrs(t, c, map[string]string{"ustore.nodes": wn.Attributes["ustore.nodes"], "ustore.bytes": wn.Attributes["ustore.bytes"]})
}

// traceOnlyChild returns s's only child, which must be named name.
func traceOnlyChild(t *testing.T, tr *jaegertest.Trace, s *jaegertest.Span, name string) *jaegertest.Span {
	t.Helper()
	if len(s.Children) != 1 || s.Children[0].Name != name {
		t.Fatalf("%s's children: %s, want just %s\n%s", s.Name, traceSpanNames(s.Children), name, tr)
	}
	return s.Children[0]
}

func traceSpanNames(spans []*jaegertest.Span) string {
	var n []string
	for _, s := range spans {
		n = append(n, s.Name)
	}
	return strings.Join(n, " ")
}

func traceWantAttrs(t *testing.T, s *jaegertest.Span, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if s.Attributes[k] != v {
			t.Errorf("%s: %s = %q, want %q (all: %v)", s.Name, k, s.Attributes[k], v, s.Attributes)
		}
	}
}

// metricsURL is the /metrics URL serve logged (it was given port 0).
func (p *serveProc) metricsURL(t *testing.T) string {
	t.Helper()
	p.waitLog(t, "trace: serving Prometheus metrics")
	m := regexp.MustCompile(`url=(http://\S+/metrics)`).FindStringSubmatch(p.stderr.String())
	if m == nil {
		t.Fatalf("no metrics URL in serve's log:\n%s", p.stderr.String())
	}
	return m[1]
}

// traceScrape reads a Prometheus text exposition: series (name and labels as
// written) to value.
func traceScrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		// A label value may hold spaces; the value (no timestamp from
		// this exporter) follows the last one.
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("/metrics line %q: no value", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("/metrics at %s is empty", url)
	}
	return out
}
