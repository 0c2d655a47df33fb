package trace

import "testing"

// TestMarkers_Call_NoAllocs calls each marker with extreme arguments: they
// must return, touch nothing and allocate nothing (Invariant 2).
func TestMarkers_Call_NoAllocs(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		LockWaitBegin(0, 0, 0, 0)
		LockWaitEnd(0, 0)
		LockWaitBegin(^uint64(0), ^uint64(0), ^uint32(0), ^uint64(0))
		LockWaitEnd(^uint64(0), ^uint64(0))
		PhaseBegin(^uint64(0), ^uint32(0), ^uint64(0))
		PhaseEnd(^uint64(0), ^uint32(0))
	})
	if allocs != 0 {
		t.Fatalf("markers allocated %v times per run, want 0", allocs)
	}
}

// BenchmarkMarkers_Pair is the cost a contended acquisition pays for the
// markers when no uprobe is attached: one LockWaitBegin plus one LockWaitEnd.
func BenchmarkMarkers_Pair(b *testing.B) {
	for i := 0; b.Loop(); i++ {
		LockWaitBegin(uint64(i), uint64(i), 1, 0)
		LockWaitEnd(uint64(i), uint64(i))
	}
}
