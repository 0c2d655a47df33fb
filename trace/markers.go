//go:build amd64

package trace

// LockWaitBegin marks the start of a contended lock acquisition: the caller
// is about to block on the lock id. token is unique to this wait in the
// process and is passed again to LockWaitEnds; kind says what sort of lock it
// is (the caller's encoding, e.g. tree and level); span is the 64-bit key of
// the current OpenTelemetry span, or 0 for none. It does nothing unless a
// uprobe is attached. Implemented in markers_amd64.s.
func LockWaitBegin(id, token uint64, kind uint32, span uint64)

// LockWaitEnds marks the ends of n waits, ends[0:n], each begun by
// LockWaitBegin with the same (id, token): each got its lock at its End
// time. Package lock calls it after the lock was released, in batches of at
// most MaxWaitEndsPerMarker, so that a uprobe hit never lengthens a critical
// section (see the package doc). Implemented in markers_amd64.s.
//
//go:noescape
func LockWaitEnds(ends *WaitEnd, n int)

// The assembly file fills these with the markers' body addresses (DATA words
// relocated by the linker, so they are right under PIE too). Go declares them
// only so that it can read them; they are never written.
var lockWaitBeginPC, lockWaitEndsPC uintptr

// MarkerPCs returns the addresses of the marker bodies, where a uprobe must
// be attached (after conversion to a file offset through /proc/self/maps).
// They differ from the func values' pointers, which lead to ABI wrappers.
func MarkerPCs() (lockWaitBegin, lockWaitEnds uintptr) {
	return lockWaitBeginPC, lockWaitEndsPC
}

// PhaseBegin marks the start of a timed phase: phase (a Phase* constant)
// of the commit or log sync id (a transid, or a log generation for
// PhaseLogSync); span is the 64-bit key of the phase's OpenTelemetry span,
// or 0. (id, phase) must not begin again before its PhaseEnd: commits are
// serialised, and so are the log syncs of one generation. Implemented in
// markers_amd64.s.
func PhaseBegin(id uint64, phase uint32, span uint64)

// PhaseEnd marks the end of the phase PhaseBegin(id, phase, ...) started.
// Implemented in markers_amd64.s.
func PhaseEnd(id uint64, phase uint32)

var phaseBeginPC, phaseEndPC uintptr

// PhaseMarkerPCs returns the addresses of PhaseBegin's and PhaseEnd's
// bodies, as MarkerPCs does for the lock-wait markers.
func PhaseMarkerPCs() (phaseBegin, phaseEnd uintptr) {
	return phaseBeginPC, phaseEndPC
}
