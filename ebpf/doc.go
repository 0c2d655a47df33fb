// Package ebpf is ustore's eBPF side: the BPF programs (bpf/*.bpf.c), their
// bpf2go-generated objects and Go bindings (committed: a build needs no
// clang; `make generate` reproduces them byte for byte and CI checks it),
// the loader that attaches them to this process (Attach, Close), and the
// bridges that turn what they measure into Prometheus histograms on
// /metrics (Collector) and into span events on the waiting request's
// OpenTelemetry span (the ring-buffer reader). It is the only package that
// imports github.com/cilium/ebpf.
//
// What is attached where (docs/TRACING.md has the operator's view):
//
//	feature       program (bpf/)                          attached to
//	markers       ustore_marker, uprobe.multi, 4 cookies  trace.LockWaitBegin/Ends, trace.PhaseBegin/End
//	io_uring      uring_submit, uring_complete (tp_btf)   io_uring_submit_req, io_uring_complete
//	kernel_locks  klock_begin, klock_end (tp_btf)         lock:contention_begin, contention_end
//	offcpu        offcpu_switch (tp_btf)                  sched_switch, for trace.ReactorThreads
//
// Each feature loads and attaches on its own, so one the kernel refuses
// does not keep the others off; Attach fails only when none attached.
// Nothing needs tracefs (tp_btf and uprobe_multi find their targets
// through BTF and sysfs); nothing is pinned, so closing the descriptors
// frees every kernel object.
//
// Uprobes sit on the markers' bodies by file offset (fileOffsets: the
// mapping of /proc/self/maps that holds the PC trace publishes), because
// test binaries and stripped builds have no symbol table; one
// uprobe_multi link covers the four markers, each with a cookie that
// tells the one program which marker hit (one link: one detach, ~60 ms,
// instead of four). The PID filter keeps other processes of the same
// binary out. Never a uretprobe: it kills Go programs (trace/doc.go).
//
// BPF histograms (bpf/hist.h) are hash maps keyed by (class, slot): slot k
// counts values in [2^k, 2^(k+1)) ns, slot 64 their sum — lock/class.go's
// layout, so BPF and Go histograms compare bucket for bucket. The
// Collector publishes them on trace.DurationBounds, the Go-side
// histograms' boundaries.
//
// # Invariants
//
//  1. Every contended acquisition of a lock.Mutex or lock.RWMutex while
//     the markers are attached adds exactly one sample to the BPF
//     histogram of its kind (mode included), equal to the Go-side Class
//     count, and leaves nothing in the in-flight map once its end was
//     reported (TestProbes_LockWaits_ExactCounts, which flushes the
//     deferred ends: while the markers are attached, package lock reports
//     ends after the lock was released, batched, lock.DeferWaitEnds).
//  2. Each commit adds one sample to each commit phase's histogram, each
//     log sync one to log_sync (TestProbes_Phases_KCommits).
//  3. Every io_uring request of this process adds exactly one sample to
//     its opcode's histogram; other processes' requests add none
//     (TestProbes_Uring_ExactCounts).
//  4. Close detaches every link and frees every map and program: after any
//     number of Attach/Close cycles the process holds the BPF descriptors
//     it held before (TestProbes_Close_LeavesNothing).
//  5. The Collector's histograms have trace.DurationBounds' boundaries and
//     the BPF counts (TestCollector_Gather_LockWaitHistogram).
//  6. The reactor threads' off-CPU histograms count exactly the context
//     switches the kernel counts for those threads (nvcsw + nivcsw), and
//     no other thread's (TestProbes_OffCPU_CountsReactorSwitches); a
//     thread keeps its slot in the BPF set while it lives, so a ring
//     opening or closing never mixes two threads' off-CPU starts
//     (TestReactorSet_KeepsSlots).
//  7. Only this package imports cilium/ebpf (internal/lint
//     TestImports_OwnedModules).
package ebpf
