package trace

import "testing"

// TestMarkers_Call_NoAllocs calls each marker with extreme arguments: they
// must return, touch nothing and allocate nothing (Invariant 2).
func TestMarkers_Call_NoAllocs(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		LockWaitBegin(0, 0, 0, 0)
		LockWaitEnds(nil, 0)
		LockWaitBegin(^uint64(0), ^uint64(0), ^uint32(0), ^uint64(0))
		end := WaitEnd{ID: ^uint64(0), Token: ^uint64(0), End: -1}
		LockWaitEnds(&end, 1)
		PhaseBegin(^uint64(0), ^uint32(0), ^uint64(0))
		PhaseEnd(^uint64(0), ^uint32(0))
	})
	if allocs != 0 {
		t.Fatalf("markers allocated %v times per run, want 0", allocs)
	}
}

// BenchmarkMarkers_Pair is the cost a contended acquisition pays for the
// markers when no uprobe is attached: one LockWaitBegin plus a LockWaitEnds
// of its one end (the most a wait pays: deferred ends share a call).
func BenchmarkMarkers_Pair(b *testing.B) {
	for i := 0; b.Loop(); i++ {
		LockWaitBegin(uint64(i), uint64(i), 1, 0)
		end := WaitEnd{ID: uint64(i), Token: uint64(i), End: int64(i)}
		LockWaitEnds(&end, 1)
	}
}
