package jaegertest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// jaegerPkg is the tool tools/go.mod pins.
const jaegerPkg = "github.com/jaegertracing/jaeger/cmd/jaeger"

// buildMargin is kept between the end of a build Start runs and the test
// binary's -timeout, so that a build too slow for it fails with a message
// instead of the test panicking.
const buildMargin = 30 * time.Second

// Binary returns the path of bin/jaeger, building it first when it is
// missing or older than tools/go.mod or tools/go.sum — as `make jaeger`
// would, and under a file lock, so that test processes running at once
// build it once.
func Binary(t testing.TB) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("jaegertest: %v", err)
	}
	bin := filepath.Join(root, "bin", "jaeger")
	sources := []string{filepath.Join(root, "tools", "go.mod"), filepath.Join(root, "tools", "go.sum")}
	if upToDate(bin, sources) {
		return bin
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatalf("jaegertest: %v", err)
	}
	unlock, err := lockFile(bin + ".lock")
	if err != nil {
		t.Fatalf("jaegertest: %v", err)
	}
	defer unlock()
	if upToDate(bin, sources) { // built by another process while we waited
		return bin
	}

	ctx := context.Background()
	if dt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		d, ok := dt.Deadline()
		if !ok {
			d = time.Now().Add(time.Hour) // -timeout 0: no deadline, but no endless build either
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-buildMargin))
		defer cancel()
	}
	msg := fmt.Sprintf("jaegertest: %s is missing or stale; building it from tools/go.mod "+
		"(`make jaeger` does the same ahead of the tests). A cold build takes 5-6 minutes on an idle "+
		"2-vCPU machine (18 on a loaded one) and 2.3 GB of memory; with the build cache warm, 10-30 s.", bin)
	t.Log(msg)
	fmt.Fprintln(os.Stderr, msg) // seen while it runs, not only after the test
	began := time.Now()
	tmp := fmt.Sprintf("%s.tmp%d", bin, os.Getpid())
	cmd := exec.CommandContext(ctx, "go", "-C", filepath.Join(root, "tools"), "build", "-o", tmp, jaegerPkg)
	out, err := cmd.CombinedOutput()
	if err != nil {
		os.Remove(tmp)
		if ctx.Err() != nil {
			t.Fatalf("jaegertest: building Jaeger did not finish before the test deadline: run `make jaeger` "+
				"before the tests, or give them a longer -timeout (%v)\n%s", err, out)
		}
		t.Fatalf("jaegertest: building Jaeger (go -C tools build -o %s %s): %v\n%s", tmp, jaegerPkg, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatalf("jaegertest: %v", err)
	}
	t.Logf("jaegertest: built %s in %v", bin, time.Since(began).Round(time.Second))
	return bin
}

// repoRoot is the nearest directory at or above the working directory (a
// test's is its package's) whose go.mod declares module ustore.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isUstoreModule(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module ustore at or above the working directory")
		}
		dir = parent
	}
}

func isUstoreModule(gomod string) bool {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "module" {
			return f[1] == "ustore"
		}
	}
	return false
}

// upToDate reports whether bin exists and is newer than every source, make's
// rule for the jaeger target.
func upToDate(bin string, sources []string) bool {
	b, err := os.Stat(bin)
	if err != nil {
		return false
	}
	for _, s := range sources {
		st, err := os.Stat(s)
		if err != nil || st.ModTime().After(b.ModTime()) {
			return false
		}
	}
	return true
}

// lockFile takes an exclusive flock on path (creating it), waiting for it.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
