//go:build linux && amd64

package ebpf

import (
	"maps"
	"testing"

	"ustore/trace"
)

// TestProbes_Close_LeavesNothing attaches and closes 100 times: afterwards
// the process holds exactly the BPF file descriptors it held before (no
// leaked link, map or program: with no pinning, a kernel object lives only
// as long as a descriptor on it), and the markers still work for a fresh
// attachment.
func TestProbes_Close_LeavesNothing(t *testing.T) {
	const rounds = 100
	base := bpfFDs(t)
	for i := range rounds {
		p := attachAll(t, Config{})
		if i == 0 && len(bpfFDs(t)) == 0 {
			t.Fatal("attached, yet no BPF descriptor open: the count proves nothing")
		}
		trace.PhaseBegin(uint64(i), 99, 0)
		trace.PhaseEnd(uint64(i), 99)
		hs, err := p.Phases()
		if err != nil || hs[99].Count() != 1 {
			t.Fatalf("round %d: phase 99 counted %d (%v), want 1 (fresh maps each time)", i, hs[99].Count(), err)
		}
		if err := p.Close(); err != nil {
			t.Fatalf("round %d: Close: %v", i, err)
		}
		if _, err := p.LockWaits(); err != ErrClosed {
			t.Fatalf("round %d: read after Close: %v, want ErrClosed", i, err)
		}
	}
	if after := bpfFDs(t); !maps.Equal(after, base) {
		t.Fatalf("BPF descriptors before %v, after %d rounds %v", base, rounds, after)
	}
}
