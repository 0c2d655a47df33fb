package trace

import _ "unsafe" // for go:linkname

// WaitEnd is the end of one lock wait, as LockWaitEnds hands it to BPF: the
// wait LockWaitBegin(ID, Token, ...) started got its lock at End, a
// Nanotime reading. Its layout is what BPF reads (Invariant 3): ID@0,
// Token@8, End@16, 24 bytes, no padding.
type WaitEnd struct {
	ID, Token uint64
	End       int64
}

// MaxWaitEndsPerMarker is the most ends one LockWaitEnds call may carry:
// the BPF program handles that many per hit and counts the rest as lost
// (its bpf_loop bound). Callers split longer batches.
const MaxWaitEndsPerMarker = 256

// Nanotime returns the runtime's monotonic clock in nanoseconds. On Linux
// it is CLOCK_MONOTONIC, read through the vDSO: the clock BPF's
// bpf_ktime_get_ns reads, so an End taken here and a begin time taken in
// BPF subtract to the wait. time.Now reads the same clock but keeps its
// reading private.
//
//go:linkname Nanotime runtime.nanotime
func Nanotime() int64
