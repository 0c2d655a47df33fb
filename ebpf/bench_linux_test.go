//go:build linux && amd64

package ebpf

import (
	"testing"

	"ustore/trace"
)

// BenchmarkProbes_LockMarkerPair is what a wait whose end is reported on
// its own pays for its markers with the uprobes attached (nop5 →
// trampoline → BPF, twice); trace's BenchmarkMarkers_Pair is the same pair
// detached.
func BenchmarkProbes_LockMarkerPair(b *testing.B) {
	defer attachForBench(b)()
	for i := uint64(1); b.Loop(); i++ {
		trace.LockWaitBegin(i, i, 1, 0)
		end := trace.WaitEnd{ID: i, Token: i, End: trace.Nanotime()}
		trace.LockWaitEnds(&end, 1)
	}
}

// BenchmarkProbes_LockMarkersBatched is the same per wait when the ends
// are reported as package lock's flush does: a begin each, then one
// LockWaitEnds for trace.MaxWaitEndsPerMarker ends.
func BenchmarkProbes_LockMarkersBatched(b *testing.B) {
	defer attachForBench(b)()
	ends := make([]trace.WaitEnd, trace.MaxWaitEndsPerMarker)
	token := uint64(0)
	for b.Loop() {
		for i := range ends {
			token++
			trace.LockWaitBegin(token, token, 1, 0)
			ends[i] = trace.WaitEnd{ID: token, Token: token, End: trace.Nanotime()}
		}
		trace.LockWaitEnds(&ends[0], len(ends))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(token), "ns/wait")
}

// BenchmarkProbes_PhaseMarkerPair: the same for a phase begin+end.
func BenchmarkProbes_PhaseMarkerPair(b *testing.B) {
	defer attachForBench(b)()
	for i := uint64(1); b.Loop(); i++ {
		trace.PhaseBegin(i, 7, 0)
		trace.PhaseEnd(i, 7)
	}
}

// attachForBench attaches every feature, or skips b where eBPF is
// unavailable; the returned func detaches with b's timer stopped (a detach
// waits for RCU: not the markers' cost).
func attachForBench(b *testing.B) (detach func()) {
	p, err := Attach(Config{})
	if err != nil {
		b.Skipf("eBPF unavailable: %v", err)
	}
	return func() {
		b.StopTimer()
		p.Close()
	}
}
