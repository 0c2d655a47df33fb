//go:build linux && amd64

package ebpf

import (
	"testing"

	"ustore/trace"
)

// BenchmarkProbes_LockMarkerPair is what a contended acquisition pays for
// its begin+end markers with the uprobes attached (nop5 → trampoline →
// BPF, twice); trace's BenchmarkMarkers_Pair is the same pair detached.
func BenchmarkProbes_LockMarkerPair(b *testing.B) {
	p, err := Attach(Config{})
	if err != nil {
		b.Skipf("eBPF unavailable: %v", err)
	}
	defer func() {
		b.StopTimer() // detach waits for RCU: not the markers' cost
		p.Close()
	}()
	for i := uint64(1); b.Loop(); i++ {
		trace.LockWaitBegin(i, i, 1, 0)
		trace.LockWaitEnd(i, i)
	}
}

// BenchmarkProbes_PhaseMarkerPair: the same for a phase begin+end.
func BenchmarkProbes_PhaseMarkerPair(b *testing.B) {
	p, err := Attach(Config{})
	if err != nil {
		b.Skipf("eBPF unavailable: %v", err)
	}
	defer func() {
		b.StopTimer()
		p.Close()
	}()
	for i := uint64(1); b.Loop(); i++ {
		trace.PhaseBegin(i, 7, 0)
		trace.PhaseEnd(i, 7)
	}
}
