//go:build linux && amd64

package ebpf

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// attachAll attaches every feature or fails; it skips, saying why, only
// where the process may not use bpf() at all (not root, or no BPF in the
// kernel). CI runs as root on a kernel with BPF, so these tests run there.
func attachAll(t *testing.T, cfg Config) *Probes {
	t.Helper()
	p, err := Attach(cfg)
	if err != nil {
		skipIfNoBPF(t, err)
		t.Fatalf("Attach: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	if f := p.Failed(); len(f) > 0 {
		for _, err := range f {
			skipIfNoBPF(t, err)
		}
		t.Fatalf("not all features attached: %s", p.Summary())
	}
	return p
}

func skipIfNoBPF(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) || errors.Is(err, os.ErrPermission) {
		t.Skipf("eBPF not permitted here (needs root or CAP_BPF+CAP_PERFMON, and a kernel with BPF): %v", err)
	}
}

// bpfFDs counts this process's file descriptors on BPF objects (maps,
// programs, links): what a leak would leave.
func bpfFDs(t *testing.T) map[string]int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, e := range ents {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err == nil && strings.HasPrefix(target, "anon_inode:bpf") {
			n[target]++
		}
	}
	return n
}

// waitFor polls cond until it holds, failing after a generous deadline:
// it waits on an event that must happen (a goroutine reaching a lock), so
// only a bug makes it time out.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Microsecond)
	}
}
