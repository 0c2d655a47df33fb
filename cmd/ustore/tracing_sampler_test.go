package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ustore/client"
	"ustore/internal/jaegertest"
)

// TestCommand_Serve_TraceSampleRatio_Jaeger: --trace-sample-ratio chooses
// the server's sampler, as the "ustore serving" line says: at 0 the
// requests of a client that sends no traceparent reach Jaeger not at all,
// while a request carrying a sampled traceparent (what a traced client
// command sends) is kept; OTEL_TRACES_SAMPLER chooses it when the flag is
// not given; and a ratio out of range stops serve with a usage error.
func TestCommand_Serve_TraceSampleRatio_Jaeger(t *testing.T) {
	j := jaegertest.Start(t)
	clearOTELEnvCmd(t)
	bin := buildUstore(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	began := time.Now()
	p := startServe(t, bin, "--device", filepath.Join(dir, "d.img"), "--size", "256M", "--socket", sock,
		"--otlp-endpoint", j.OTLPEndpoint(), "--trace-sample-ratio", "0")
	p.waitLog(t, `trace_sampler="parentbased_traceidratio 0"`)

	ctx := context.Background()
	plain := dialCmd(t, sock, "")
	for i := range 20 {
		if _, err := plain.Mkdir(ctx, client.RootIno, fmt.Sprintf("untraced%d", i), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	traceID := fmt.Sprintf("%032x", 0x5a)
	traced := dialCmd(t, sock, "00-"+traceID+"-00000000000000e1-01")
	if _, err := traced.Mkdir(ctx, client.RootIno, "traced", 0o755); err != nil {
		t.Fatal(err)
	}
	plain.Close()
	traced.Close()
	p.stop(t) // flushes the exporter: one batch holds every span it kept

	qctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	tr, err := j.WaitTrace(qctx, traceID)
	if err != nil {
		t.Fatal(err)
	}
	if s := tr.Find("ustore.mkdir"); s == nil || s.ParentID != "00000000000000e1" {
		t.Fatalf("no ustore.mkdir under the client's sampled span:\n%s", tr)
	}
	all, err := j.Traces(qctx, "ustore", began, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range all {
		if s := tr.Find("ustore.mkdir"); s != nil && tr.ID != traceID {
			t.Errorf("an untraced request was exported at ratio 0:\n%s", tr)
		}
	}

	t.Run("env", func(t *testing.T) {
		t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
		dir := t.TempDir()
		p := startServe(t, bin, "--device", filepath.Join(dir, "d.img"), "--size", "256M",
			"--socket", filepath.Join(dir, "s.sock"), "--otlp-endpoint", j.OTLPEndpoint())
		p.waitLog(t, `trace_sampler=always_on`)
		p.waitLog(t, `sampler_source=OTEL_TRACES_SAMPLER`)
		p.stop(t)
	})
	t.Run("out_of_range", func(t *testing.T) {
		dir := t.TempDir()
		out, err := exec.Command(bin, "serve", "--device", filepath.Join(dir, "d.img"), "--size", "256M",
			"--otlp-endpoint", j.OTLPEndpoint(), "--trace-sample-ratio", "1.5").CombinedOutput()
		want := "ustore: tracing: trace: bad sampler: --trace-sample-ratio 1.5 (want 0 to 1)"
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("serve --trace-sample-ratio 1.5: %v\n%s\nwant %q", err, out, want)
		}
	})
}

// dialCmd dials sock with a client that sends traceparent with every
// request ("" sends none).
func dialCmd(t *testing.T, sock, traceparent string) *client.Client {
	t.Helper()
	c, err := client.DialOptions(context.Background(), sock, client.Options{
		Traceparent: func(context.Context) string { return traceparent }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
