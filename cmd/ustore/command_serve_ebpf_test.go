package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"ustore/client"
)

// requireRoot skips a test that needs BPF when the test does not run as
// root; CI runs as root, so it runs there.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_BPF, CAP_PERFMON) to attach BPF programs")
	}
	if runtime.GOARCH != "amd64" {
		t.Skip("the BPF programs read the amd64 markers' stack: amd64 only")
	}
}

// TestCommand_Serve_EBPFOn_Metrics: `serve --ebpf on` attaches every
// feature, says so, and /metrics carries the BPF histograms of the work it
// did: commit phases, io_uring operations, and the log sync of an fsync.
func TestCommand_Serve_EBPFOn_Metrics(t *testing.T) {
	requireRoot(t)
	bin := buildUstore(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	p := startServe(t, bin, "--device", filepath.Join(dir, "d.img"), "--size", "256M", "--socket", sock,
		"--backend", "io_uring", "--metrics-addr", "127.0.0.1:0", "--commit-interval", "5m", "--ebpf", "on")
	p.waitLog(t, "ebpf on")
	p.waitLog(t, "attached=markers,io_uring,kernel_locks,offcpu")
	url := p.metricsURL(t)
	before := traceScrape(t, url)

	ctx := context.Background()
	c, err := client.Dial(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, err := c.Create(ctx, client.RootIno, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(ctx, f.Ino, 0, bytes.Repeat([]byte("x"), 8192)); err != nil {
		t.Fatal(err)
	}
	if err := c.Fsync(ctx, f.Ino, false); err != nil {
		t.Fatal(err)
	}
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	after := traceScrape(t, url)
	for _, series := range []string{
		`ustore_ebpf_phase_seconds_count{phase="commit"}`,
		`ustore_ebpf_phase_seconds_count{phase="super"}`,
		`ustore_ebpf_phase_seconds_count{phase="log_sync"}`,
	} {
		if after[series]-before[series] < 1 {
			t.Errorf("%s: %v → %v, want at least one more", series, before[series], after[series])
		}
	}
	// The Go-side and BPF-side commit counts agree: one commit, seen twice.
	goSide := after["ustore_commit_duration_seconds_count"] - before["ustore_commit_duration_seconds_count"]
	bpfSide := after[`ustore_ebpf_phase_seconds_count{phase="commit"}`] - before[`ustore_ebpf_phase_seconds_count{phase="commit"}`]
	if goSide != bpfSide {
		t.Errorf("commits: Go side +%v, BPF side +%v", goSide, bpfSide)
	}
	uring := 0.0
	for series, v := range after {
		if strings.HasPrefix(series, "ustore_ebpf_io_uring_op_seconds_count{") {
			uring += v
		}
	}
	if uring == 0 {
		t.Errorf("no io_uring operation counted by BPF on the io_uring backend")
	}
	// The reactor slept between the requests: its off-CPU time is there.
	if after[`ustore_ebpf_reactor_offcpu_seconds_count{reason="wait"}`] == 0 {
		t.Errorf("no off-CPU wait of the io_uring reactor counted")
	}
	p.stop(t)
	if !strings.Contains(p.stderr.String(), "ebpf detached") {
		t.Errorf("serve did not log the detach:\n%s", p.stderr.String())
	}
}

// TestCommand_Serve_EBPFAuto_WithoutPrivileges: `serve --ebpf auto` started
// without CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN (dropped from the bounding
// set by setpriv before the exec, so even root lacks them) still serves,
// and its log says eBPF is off and why; `--ebpf on` refuses to start.
func TestCommand_Serve_EBPFAuto_WithoutPrivileges(t *testing.T) {
	requireRoot(t)
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("needs setpriv (util-linux) to drop capabilities")
	}
	bin := buildUstore(t)
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "ustore-nocaps")
	script := "#!/bin/sh\nexec " + setpriv + " --inh-caps=-all --ambient-caps=-all --bounding-set=-bpf,-perfmon,-sys_admin -- " + bin + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	p := startServe(t, wrapper, "--device", filepath.Join(dir, "d.img"), "--size", "256M", "--socket", sock, "--ebpf", "auto")
	p.waitLog(t, "ebpf off")
	log := p.stderr.String()
	if !strings.Contains(log, "operation not permitted") {
		t.Errorf("the log does not say why eBPF is off:\n%s", log)
	}
	ctx := context.Background()
	c, err := client.Dial(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, client.RootIno, "f", 0o644); err != nil {
		t.Fatalf("a server without eBPF must serve: %v", err)
	}
	c.Close()
	p.stop(t)

	out, err := exec.Command(wrapper, "serve", "--device", filepath.Join(dir, "d.img"), "--socket", sock, "--ebpf", "on").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--ebpf on") {
		t.Fatalf("--ebpf on without privileges: %v\n%s", err, out)
	}
}

// TestCommand_Serve_EBPFFeatures_Subset: --ebpf-features attaches only
// what it names, and says so.
func TestCommand_Serve_EBPFFeatures_Subset(t *testing.T) {
	requireRoot(t)
	bin := buildUstore(t)
	dir := t.TempDir()
	p := startServe(t, bin, "--device", filepath.Join(dir, "d.img"), "--size", "256M", "--socket", filepath.Join(dir, "s.sock"),
		"--ebpf", "on", "--ebpf-features", "markers")
	p.waitLog(t, "ebpf on")
	p.stop(t)
	if log := p.stderr.String(); !strings.Contains(log, "attached=markers\n") {
		t.Fatalf("want exactly the markers attached:\n%s", log)
	}
}
