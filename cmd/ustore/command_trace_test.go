package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"ustore/client"
)

// TestCommand_Trace_JSONAndLive: `ustore trace` reads a running server's
// eBPF histograms: --json gives the commit the test made (one sample in
// each commit phase at least) and the live view prints every block; a
// server with --ebpf off has nothing to show, and trace says why.
func TestCommand_Trace_JSONAndLive(t *testing.T) {
	requireRoot(t)
	bin := buildUstore(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	p := startServe(t, bin, "--device", filepath.Join(dir, "d.img"), "--size", "256M", "--socket", sock,
		"--metrics-addr", "127.0.0.1:0", "--commit-interval", "5m", "--ebpf", "on")
	url := p.metricsURL(t)
	ctx := context.Background()
	c, err := client.Dial(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create(ctx, client.RootIno, "f", 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}

	out, err := run(t, "trace", "--json", "--metrics", url)
	if err != nil {
		t.Fatalf("trace --json: %v\n%s", err, out)
	}
	var snap traceSnapshot
	if err := json.Unmarshal([]byte(out), &snap); err != nil {
		t.Fatalf("trace --json output: %v\n%s", err, out)
	}
	phases := map[string]traceRow{}
	for _, r := range snap.Phases {
		phases[r.Name] = r
	}
	for _, ph := range []string{"commit", "update_roots", "write_nodes", "flush", "super"} {
		if r := phases[ph]; r.Count < 1 || r.SumSeconds <= 0 || r.P99Seconds < r.P50Seconds {
			t.Errorf("phase %s: %+v, want at least one sample", ph, r)
		}
	}

	out, err = run(t, "trace", "--metrics", url, "--interval", "50ms", "--count", "2")
	if err != nil {
		t.Fatalf("trace: %v\n%s", err, out)
	}
	for _, want := range []string{"LOCK WAITS", "COMMIT PHASES AND LOG SYNCS", "IO_URING", "KERNEL LOCK CONTENTION", "commit", "long lock waits:"} {
		if strings.Count(out, want) < 2 {
			t.Errorf("live view lacks %q twice (two refreshes):\n%s", want, out)
		}
	}
	p.stop(t)

	off := startServe(t, bin, "--device", filepath.Join(dir, "e.img"), "--size", "256M", "--socket", filepath.Join(dir, "e.sock"),
		"--metrics-addr", "127.0.0.1:0", "--ebpf", "off")
	out, err = run(t, "trace", "--json", "--metrics", off.metricsURL(t))
	if err == nil || !strings.Contains(err.Error(), "no ustore_ebpf_* series") {
		t.Fatalf("trace of a server without eBPF: %v\n%s", err, out)
	}
	off.stop(t)
}
