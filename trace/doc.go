// Package trace is ustore's tracing layer: the OpenTelemetry setup (Setup:
// spans to an OTLP/HTTP collector such as Jaeger, histograms to a Prometheus
// /metrics endpoint), the helpers other packages use instead of importing
// OpenTelemetry themselves (Start, Span, the attribute helpers, W3C
// traceparent in and out, the Record functions), and the marker functions
// that eBPF uprobes attach to (docs/ARCHITECTURE.md, "Tracing"). It imports no project
// package, so that any package may call it.
//
//	ustore.fsync (ctx from ContextWithRemoteParent(ctx, traceparent))
//	├── logtree.sync_log      Contexts(n)
//	└── journal.commit        Transid(t), Nodes(n)
//	    └── a span a phase: update_roots, write_nodes, flush, super
//	        (write_data, the writeback before a commit, is a child of the
//	        store.fsync or store.sync span beside it)
//
// # Cost when off
//
// Until Setup turns them on, and after its shutdown, Start returns the
// caller's context and the zero Span, every Span method does nothing, and
// the Record functions return: one atomic load each, no allocation
// (BenchmarkStart_OffNoAttrs, BenchmarkRecordRequest_Off: a few ns, like a
// marker pair). The variadic attribute arguments stay on the caller's stack
// because they are copied before they reach an OpenTelemetry interface (see
// start in spans.go), but the caller still builds them: about 10 ns an
// attribute (BenchmarkStart_Off), which a hot path can skip by testing
// Enabled.
//
// # Sampling
//
// Setup's sampler (sampler.go) comes from Config.SampleRatio (serve's
// --trace-sample-ratio), else OTEL_TRACES_SAMPLER and its argument, else
// DefaultSampling: parentbased_traceidratio at 1 %, for the reasons
// Sampling gives.
//
// # Histograms
//
// Every histogram has power-of-two boundaries (DurationBounds: 2^8 to 2^35
// ns, in seconds; CountBounds: 1 to 4096), so that a Go-side histogram and
// a BPF log2 histogram line up bucket for bucket; the eBPF bridge publishes
// its own through RegisterCollector on the same registry.
//
// # Markers
//
// A marker is a function that does nothing, called at a point a BPF program
// wants to see: LockWaitBegin just before a contended lock acquisition
// blocks, LockWaitEnds with the ends of one or more such waits (each with
// the time its lock was got, so that BPF measures the wait however late the
// end is reported); PhaseBegin and PhaseEnd
// around each commit, each of its phases (phases.go) and each log sync, so
// that BPF times them independently of the Go-side spans. With nothing attached a
// begin+end pair costs a few ns (about 3 ns in the study, 5–9 ns measured by
// BenchmarkMarkers_Pair on a loaded 2-vCPU VM); callers make the calls only
// on slow paths (package lock calls them only after a failed try-lock), so
// the fast path pays nothing at all.
//
// Why assembly with a 5-byte NOP. An empty Go function compiles to a lone
// RET; a uprobe on it costs an int3 trap plus a single-step trap, about 13 µs
// a hit on this VM. On a 5-byte NOP (0f 1f 44 00 00) Linux 6.18 rewrites the
// probe into a call to its uprobe trampoline, about 1.2 µs a hit
// (2,390 ns a begin+end pair, medians of 5 runs, in the feasibility study
// made on this VM before ebpf/ was written; docs/BENCHMARKS.md "eBPF overhead"
// has today's figures). A hit right after an acquisition would run with
// the lock held and add its cost to the hold time, which under contention
// was all of eBPF's overhead; that is why an end is a WaitEnd value that
// package lock may buffer and report after the lock was released, many to
// a hit (lock's "Deferred ends"). The markers are ABI0 functions, so their
// arguments sit on the stack: BPF reads them at sp+8 (the word at sp is the
// return address), and LockWaitEnds's array through its pointer.
//
// Why MarkerPCs. The Go func value of an assembly function points at an
// ABIInternal wrapper the toolchain generates, not at the body, and the ELF
// symbol of the body carries a ".abi0" suffix; test binaries and stripped
// builds have no symbol table at all. The loader therefore attaches by file
// offset, computed from the body's PC (published by the assembly file as a
// DATA word) and /proc/self/maps.
//
// Why (lock id, token). A goroutine may block on one OS thread and wake on
// another (37–54 % of long waits did in the study), so BPF must never key a
// wait by thread id. Each wait gets a token unique in the process; the pair
// (lock id, token) joins a Begin with its End.
//
// Never a uretprobe on a Go function: the kernel swaps the return address for
// its trampoline page, which Go's unwinder (stack growth, GC, preemption,
// panics, profiling) cannot resolve, and the runtime dies with "unknown
// caller pc". That is why there are explicit begin and end markers.
//
// # Invariants
//
//  1. On amd64 every marker's body starts with the 5-byte NOP 0f 1f 44 00 00
//     followed by RET — no prologue, no stack check (NOSPLIT|NOFRAME) — and
//     MarkerPCs returns the address of that body, which is the function's
//     entry, not a wrapper's (TestMarkerPCs_Body_IsNop5).
//  2. A marker has no effect besides returning: it reads no argument, writes
//     nothing and allocates nothing (TestMarkers_Call_NoAllocs).
//  3. The argument frame sizes match the Go declarations (go vet's asmdecl),
//     so the stack layout BPF reads is the one the Go signature implies:
//     LockWaitBegin id@0 token@8 kind@16 (uint32, padded) span@24;
//     LockWaitEnds ends@0 n@8, each WaitEnd 24 bytes: id@0 token@8 end@16
//     (TestWaitEnd_Layout); PhaseBegin id@0 phase@8 (uint32, padded)
//     span@16; PhaseEnd id@0 phase@8 (12 bytes). WaitEnd.End and Nanotime
//     are CLOCK_MONOTONIC nanoseconds, BPF's bpf_ktime_get_ns
//     (TestNanotime_IsClockMonotonic).
//  4. trace imports no ustore package (TestPackage_Imports_NoProjectPackage).
//  5. Off, Start, Span and the Record functions allocate nothing
//     (TestStart_Off_NoAllocs, TestRecord_Off_NoAllocs); on, a Record
//     function with a label value seen before allocates nothing either
//     (TestRecord_On_NoAllocs).
//  6. The shutdown Setup returns ends within Config.ShutdownTimeout, even
//     when the collector accepts and never answers
//     (TestSetup_StuckCollector_ShutdownBounded).
//  7. Every histogram's boundaries are powers of two, and a value lands in
//     the bucket of the next power of two
//     (TestMetrics_Scrape_PowerOfTwoBuckets).
//  8. A span tree exported through Setup reads back from a real Jaeger with
//     its parents, attributes and events (TestSetup_Jaeger_SpanTree).
//  9. While span binding is on, CurrentSpanKey returns the key of the span
//     the calling goroutine bound, and only until it unbinds; other
//     goroutines see 0 (TestSpan_Bind_CurrentSpanKey). AddLockWait puts a
//     wait on a live bound span as an event, on an ended one as a child
//     span (TestAddLockWait_LiveThenEnded).
//  10. With a provider from NewTracerProvider (Setup's), Start decides as the
//     SDK's sampler would (TestDecider_Decide_MatchesSDK), before calling
//     it: a dropped span allocates nothing under an unsampled parent and
//     at most its unsampled span context for a new trace, and the spans
//     started under a dropped one are dropped with it
//     (TestStart_Unsampled_Cheap, TestStart_Unsampled_NoRecordingSpan).
//
// # Span binding
//
// Lock calls take no context, yet a lock wait must name the request it
// delays. So while the eBPF loader has binding on (SetSpanBinding), the
// server binds each request's span to the goroutine that serves it
// (Span.Bind, undone by Binding.Unbind); the goroutine is named by its g
// pointer, read from thread-local storage (goroutine_amd64.s), which stays
// the same when the goroutine changes threads. Package lock's slow path
// passes CurrentSpanKey to LockWaitBegin; the BPF program returns it with a
// long wait, and AddLockWait finds the span by that key (kept findable
// for 10 s after the request ended). Off, Bind and CurrentSpanKey cost one
// atomic load.
//
// # Reactor threads
//
// Each io_uring reactor runs on an OS thread of its own (ring/), and the
// eBPF loader measures those threads' off-CPU time from sched_switch,
// which names threads, not goroutines. ring/ registers its reactor's
// thread id (AddReactorThread) while the reactor runs, and unregisters it
// before Close returns; the loader follows the set (WatchReactorThreads).
package trace
