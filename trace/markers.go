//go:build amd64

package trace

// LockWaitBegin marks the start of a contended lock acquisition: the caller
// is about to block on the lock id. token is unique to this wait in the
// process and is passed again to LockWaitEnd; kind says what sort of lock it
// is (the caller's encoding, e.g. tree and level); span is the 64-bit key of
// the current OpenTelemetry span, or 0 for none. It does nothing unless a
// uprobe is attached. Implemented in markers_amd64.s.
func LockWaitBegin(id, token uint64, kind uint32, span uint64)

// LockWaitEnd marks the end of the wait LockWaitBegin(id, token, ...)
// started: the caller now holds the lock. Implemented in markers_amd64.s.
func LockWaitEnd(id, token uint64)

// The assembly file fills these with the markers' body addresses (DATA words
// relocated by the linker, so they are right under PIE too). Go declares them
// only so that it can read them; they are never written.
var lockWaitBeginPC, lockWaitEndPC uintptr

// MarkerPCs returns the addresses of the marker bodies, where a uprobe must
// be attached (after conversion to a file offset through /proc/self/maps).
// They differ from the func values' pointers, which lead to ABI wrappers.
func MarkerPCs() (lockWaitBegin, lockWaitEnd uintptr) {
	return lockWaitBeginPC, lockWaitEndPC
}
