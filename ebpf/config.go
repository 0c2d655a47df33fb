package ebpf

import (
	"log/slog"
	"strconv"
	"time"
)

// The features Attach tries, each loaded and attached on its own so that
// one the kernel refuses does not keep the others off.
const (
	// FeatureMarkers: uprobes on trace's markers — lock waits per lock
	// kind, commit and log-sync phases, long waits to the ring buffer.
	FeatureMarkers = "markers"
	// FeatureUring: tp_btf io_uring_submit_req/io_uring_complete, latency
	// per opcode of this process's rings.
	FeatureUring = "io_uring"
	// FeatureKernelLocks: tp_btf lock:contention_begin/end of this
	// process's threads.
	FeatureKernelLocks = "kernel_locks"
	// FeatureOffCPU: tp_btf sched_switch, off-CPU time of the io_uring
	// reactor threads (trace.ReactorThreads), waiting or preempted.
	FeatureOffCPU = "offcpu"
)

// Features lists every feature in the order Attach tries them.
var Features = []string{FeatureMarkers, FeatureUring, FeatureKernelLocks, FeatureOffCPU}

// DefaultWaitThreshold is the wait at or above which a lock wait is also
// reported one by one (ring buffer → span event), not only counted.
const DefaultWaitThreshold = time.Millisecond

// Config configures Attach. The zero value is usable.
type Config struct {
	// WaitThreshold: lock waits at least this long become WaitEvents
	// (DefaultWaitThreshold when 0).
	WaitThreshold time.Duration
	// OnWait, if set, sees every WaitEvent, after it was attached to its
	// span. It runs on the ring-buffer reader goroutine: it must not block.
	OnWait func(WaitEvent)
	// Log gets one line per feature that failed (slog.Default when nil).
	Log *slog.Logger
	// Features selects what to attach (nil: every one of Features).
	Features []string
}

// wants reports whether cfg asks for feature f.
func (cfg Config) wants(f string) bool {
	if cfg.Features == nil {
		return true
	}
	for _, w := range cfg.Features {
		if w == f {
			return true
		}
	}
	return false
}

// WaitEvent is one lock wait over the threshold, as BPF saw it.
type WaitEvent struct {
	LockID uint64 // the lock's id: a node's bytenr, a tree id, ...
	Token  uint64 // the wait's token (lock package)
	Kind   uint32 // lock kind (lock/kind.go), write bit included
	Span   uint64 // the waiter's span key (trace.Span.Key), 0 for none
	Start  time.Time
	Wait   time.Duration
	// Tid is the thread that began the wait. Which thread got the lock is
	// not known: the end reaches BPF later, from the goroutine that
	// flushes deferred ends (package lock).
	Tid uint32
	// Joined says how the wait reached its request's trace, TraceID which
	// trace (hex, as Jaeger shows it); "" when no span was known.
	Joined  string
	TraceID string
}

// How a WaitEvent joined its span (WaitEvent.Joined).
const (
	JoinedSpanEvent = "span_event" // a lock.wait event on the live request span
	JoinedChildSpan = "child_span" // the span had ended: a lock.wait child span
)

// Why a reactor thread was off its CPU (the class of ReactorOffCPU's
// histograms; bpf/offcpu.bpf.c's REASON_*).
const (
	// OffCPUWait: it slept — in io_uring_enter waiting for completions or
	// for work, or on a futex. Idle time, or the device's latency.
	OffCPUWait = 0
	// OffCPUPreempted: it was runnable and waited for a CPU. This delays
	// submissions and completions: the time a busy machine adds to I/O.
	OffCPUPreempted = 1
)

// OffCPUReason names a reason: "wait", "preempted", "reason<n>".
func OffCPUReason(r uint32) string {
	switch r {
	case OffCPUWait:
		return "wait"
	case OffCPUPreempted:
		return "preempted"
	}
	return "reason" + strconv.Itoa(int(r))
}
