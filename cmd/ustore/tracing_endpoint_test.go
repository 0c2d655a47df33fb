package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ustore/client"
	"ustore/internal/jaegertest"
)

// TestCommand_Serve_TracingEnv_Jaeger: OTEL_EXPORTER_OTLP_ENDPOINT in both
// forms --otlp-endpoint accepts, host:port and http://host:port, sends
// spans to the real Jaeger; serve's "ustore serving" line names the URL
// used and that it came from the environment; and the SDK's own reading
// of the variable leaves no raw line on stderr. (With host:port the SDK
// alone posted to https://localhost:4318 after an "internal_logging.go:50"
// line, and the serving line said otlp_endpoint="".)
func TestCommand_Serve_TracingEnv_Jaeger(t *testing.T) {
	j := jaegertest.Start(t)
	clearOTELEnvCmd(t)
	bin := buildUstore(t)
	hostPort := strings.TrimPrefix(j.OTLPEndpoint(), "http://")
	for i, env := range []string{hostPort, j.OTLPEndpoint()} {
		t.Run(env, func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", env)
			dir := t.TempDir()
			sock := filepath.Join(dir, "s.sock")
			p := startServe(t, bin, "--device", filepath.Join(dir, "d.img"), "--size", "256M", "--socket", sock)
			want := fmt.Sprintf("otlp_endpoint=http://%s/v1/traces otlp_endpoint_source=OTEL_EXPORTER_OTLP_ENDPOINT", hostPort)
			p.waitLog(t, want)

			// One request under a trace of the test's making: the
			// server's span continues it.
			traceID := fmt.Sprintf("%032x", 0xe0+i)
			tp := "00-" + traceID + "-00000000000000e1-01"
			ctx := context.Background()
			c, err := client.DialOptions(ctx, sock, client.Options{Traceparent: func(context.Context) string { return tp }})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Mkdir(ctx, client.RootIno, "traced", 0o755); err != nil {
				t.Fatal(err)
			}
			c.Close()
			p.stop(t) // flushes the exporter
			if log := p.stderr.String(); strings.Contains(log, "internal_logging") || strings.Contains(log, "parse url") {
				t.Errorf("serve's log has the SDK's raw line:\n%s", log)
			}

			qctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			tr, err := j.WaitTrace(qctx, traceID)
			if err != nil {
				t.Fatal(err)
			}
			s := tr.Find("ustore.mkdir")
			if s == nil || s.Service != "ustore" || s.ParentID != "00000000000000e1" {
				t.Fatalf("no ustore.mkdir of service ustore under the test's span:\n%s", tr)
			}
		})
	}
}

// clearOTELEnvCmd unsets the OTEL_* variables for the test, so that
// neither the test's environment nor the machine's steers the binaries.
func clearOTELEnvCmd(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "OTEL_") {
			t.Setenv(k, "")
		}
	}
}
