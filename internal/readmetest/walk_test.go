package readmetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"ustore/internal/jaegertest"
)

const (
	// blockTimeout bounds one block, what it starts in the background
	// included; the walk as a whole stays under a minute.
	blockTimeout = 60 * time.Second
	// jaegerQuery is the query port of the Jaeger the README's block
	// starts (Jaeger's default, bound to 127.0.0.1 there).
	jaegerQuery = "127.0.0.1:16686"
	// traceWait bounds the wait for a check-trace span: blocks run with
	// OTEL_BSP_SCHEDULE_DELAY at 100 ms, so spans leave serve within
	// 100 ms instead of the SDK's 5 s (Jaeger may still be starting).
	traceWait = 30 * time.Second
)

// TestReadme_Walk runs README.md's sh blocks in order, in a scratch
// directory with the repository's files, a fresh ./ustore and a `ustore
// serve` running as `make run` would leave it (doc.go).
func TestReadme_Walk(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := ParseBlocks(string(md))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		if b.Skip == "" && b.CheckTrace != "" {
			jaegertest.Binary(t) // bin/jaeger, built when missing or stale, as `make jaeger` does
			break
		}
	}
	dir := scratch(t, root)
	env := blockEnv(t)
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "ustore"), "./cmd/ustore")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	stop := serve(t, dir, env)

	ran := 0
	for _, b := range blocks {
		if b.Skip != "" {
			t.Logf("README.md:%d: skipped (%s)", b.Line, b.Skip)
			continue
		}
		if _, err := os.Stat(b.Needs); b.Needs != "" && err != nil {
			t.Logf("README.md:%d: skipped (it needs %s: %v)", b.Line, b.Needs, err)
			continue
		}
		runBlock(t, dir, env, b)
		ran++
	}
	if ran == 0 {
		t.Fatal("README.md has no block the walk runs")
	}
	stop()
}

// scratch is a directory with a symlink to each top-level entry of the
// repository but what make run and the blocks write (./ustore, its data
// directory): the blocks read README.md, bench/, bin/jaeger, the Makefile.
func scratch(t *testing.T, root string) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch e.Name() {
		case ".git", "ustore", "ustore-data":
			continue
		}
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// blockEnv is the blocks' environment: this one without ustore's and
// OTel's variables (a developer's own settings must not steer the walk),
// without a ustore on PATH (doc.go, invariant 4), with spans exported
// every 100 ms.
func blockEnv(t *testing.T) []string {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "USTORE_"), strings.HasPrefix(k, "OTEL_"), k == "NOTIFY_SOCKET":
			continue
		case k == "PATH":
			var keep []string
			for _, d := range filepath.SplitList(v) {
				if _, err := os.Stat(filepath.Join(d, "ustore")); err != nil {
					keep = append(keep, d)
				}
			}
			kv = "PATH=" + strings.Join(keep, string(filepath.ListSeparator))
		}
		env = append(env, kv)
	}
	return append(env, "OTEL_BSP_SCHEDULE_DELAY=100")
}

// serve starts ./ustore serve in dir, as make run does, waits for its
// READY=1, and returns what stops it (SIGTERM; it must exit 0).
func serve(t *testing.T, dir string, env []string) (stop func()) {
	t.Helper()
	notify := filepath.Join(t.TempDir(), "notify.sock")
	nl, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notify, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer nl.Close()
	logPath := filepath.Join(t.TempDir(), "serve.log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command("./ustore", "serve")
	cmd.Dir, cmd.Env = dir, append(env, "NOTIFY_SOCKET="+notify)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			cmd.Process.Kill()
			<-exited
			t.Logf("the walk's server's log:\n%s", readFile(logPath))
		}
	})
	nl.SetReadDeadline(time.Now().Add(blockTimeout))
	buf := make([]byte, 64)
	if n, _, err := nl.ReadFromUnix(buf); err != nil || string(buf[:n]) != "READY=1" {
		t.Fatalf("./ustore serve not ready: %q %v", buf[:n], err)
	}
	return func() {
		t.Helper()
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			stopped = true
			if err != nil {
				t.Fatalf("./ustore serve after SIGTERM: %v\n%s", err, readFile(logPath))
			}
		case <-time.After(blockTimeout):
			t.Fatalf("./ustore serve did not stop after SIGTERM\n%s", readFile(logPath))
		}
	}
}

// runBlock runs one block with bash -e -o pipefail in a process group of
// its own, checks its trace when it has a check-trace marker, then ends
// the group: what the block left running in the background gets SIGTERM
// (a server shuts down cleanly), then SIGKILL. Output goes to a file, not
// a pipe: a pipe would stay open in those background processes and hold
// the wait.
func runBlock(t *testing.T, dir string, env []string, b Block) {
	t.Helper()
	out, err := os.CreateTemp(t.TempDir(), "block")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	start := time.Now()
	cmd := exec.Command("bash", "-e", "-o", "pipefail", "-c", b.Body)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	defer endGroup(t, pgid)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	fail := func(format string, args ...any) {
		t.Helper()
		endGroup(t, pgid)
		t.Fatalf("README.md:%d: %s\nthe block:\n%s\nits output:\n%s", b.Line, fmt.Sprintf(format, args...), b.Body, readFile(out.Name()))
	}
	select {
	case err := <-done:
		if err != nil {
			fail("%v (a block that cannot run in CI needs <!-- readme-walk: skip (REASON) --> before it)", err)
		}
	case <-time.After(blockTimeout):
		fail("still running after %v", blockTimeout)
	}
	if b.CheckTrace != "" {
		if err := waitSpan(start, b.CheckTrace); err != nil {
			fail("%v", err)
		}
	}
	t.Logf("README.md:%d: ran in %v", b.Line, time.Since(start).Round(time.Millisecond))
}

// waitSpan waits for a trace of service ustore, begun since start, with a
// span named span, in the Jaeger on jaegerQuery.
func waitSpan(start time.Time, span string) error {
	ctx, cancel := context.WithTimeout(context.Background(), traceWait)
	defer cancel()
	j := jaegertest.Running(jaegerQuery)
	var last error
	for {
		traces, err := j.Traces(ctx, "ustore", start.Add(-time.Second), time.Now().Add(time.Second))
		for _, tr := range traces {
			if tr.Find(span) != nil {
				return nil
			}
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no trace with a span %s reached Jaeger on %s within %v (%d traces; last error %v)", span, jaegerQuery, traceWait, len(traces), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// endGroup sends SIGTERM to the process group, waits for it to empty, and
// sends SIGKILL to what is left after blockTimeout.
func endGroup(t *testing.T, pgid int) {
	t.Helper()
	if err := syscall.Kill(-pgid, syscall.SIGTERM); errors.Is(err, syscall.ESRCH) {
		return
	}
	for deadline := time.Now().Add(blockTimeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
	t.Errorf("process group %d still running %v after SIGTERM; killed", pgid, blockTimeout)
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
