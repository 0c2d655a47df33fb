//go:build !amd64

package trace

// On other architectures the markers are plain Go functions, kept out of line
// so that a call site still exists. They cost a few ns like the assembly ones,
// but a uprobe on them would be the slow int3 + single-step kind, and their
// ABI puts the arguments in registers, not on the stack: the eBPF loader does
// not attach here (MarkerPCs returns zeros).

// LockWaitBegin marks the start of a contended lock acquisition; see the
// amd64 version in markers.go.
//
//go:noinline
func LockWaitBegin(id, token uint64, kind uint32, span uint64) {}

// LockWaitEnds marks the ends of the waits ends[0:n]; see the amd64
// version in markers.go.
//
//go:noinline
func LockWaitEnds(ends *WaitEnd, n int) {}

// MarkerPCs returns zeros: there are no nop5 marker bodies on this
// architecture, and the eBPF loader must report "unsupported".
func MarkerPCs() (lockWaitBegin, lockWaitEnds uintptr) {
	return 0, 0
}

// PhaseBegin marks the start of a commit or log-sync phase; see the amd64
// version in markers.go.
//
//go:noinline
func PhaseBegin(id uint64, phase uint32, span uint64) {}

// PhaseEnd marks the end of a phase; see the amd64 version in markers.go.
//
//go:noinline
func PhaseEnd(id uint64, phase uint32) {}

// PhaseMarkerPCs returns zeros, as MarkerPCs does here.
func PhaseMarkerPCs() (phaseBegin, phaseEnd uintptr) {
	return 0, 0
}
