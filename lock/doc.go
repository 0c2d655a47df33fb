// Package lock is the one lock type every lock of interest in ustore goes
// through: B-tree node locks and the fsync log's mutex (docs/ARCHITECTURE.md, "Locks").
// It wraps sync.RWMutex and sync.Mutex so that a contended acquisition is
// visible twice: to eBPF, through the trace markers, and to Go, through a
// per-Class wait histogram that exists without root or BPF and that tests
// can assert exact counts on.
//
// Fast path and slow path. Lock (RLock) first tries the embedded sync lock's
// TryLock (TryRLock) and, when that succeeds, returns: no clock read, no
// atomic of our own, no marker. Only when the try fails does the slow path
// run:
//
//	token := next process-wide wait token
//	trace.LockWaitBegin(id, token, class kind | KindWrite if exclusive,
//	                    trace.CurrentSpanKey())
//	t0 := trace.Nanotime()
//	block in the sync lock's Lock (RLock)      (the lock is held from here on)
//	t1 := trace.Nanotime()
//	class.record(t1 - t0)
//	end (id, token, t1): trace.LockWaitEnds now, or, while DeferWaitEnds
//	is on, buffered and reported by a flush after the lock was released
//
// Deferred ends (wait_end.go). A uprobe hit costs 1–2 µs; an end marker hit
// right after the acquisition lengthens the critical section it starts, and
// under heavy contention that was all of eBPF's overhead. So the eBPF loader
// turns deferral on while its markers are attached: the end — carrying the
// time the lock was got, so BPF still measures the wait exactly — waits in a
// bounded process-wide buffer, and a timer's flush, DeferredEndsDelay after
// the first end buffered, reports the buffer in a few batched LockWaitEnds
// calls from a goroutine that holds no lock. A full buffer reports an end at
// once; nothing is dropped.
//
// A failed try is not proof that the blocking call will wait (the holder may
// release in between); such a wait is still counted, with its short
// duration. So Contended counts acquisitions that found the lock taken, which
// is what the eBPF side counts too.
//
// Lock ids. The id given to Init names the lock instance for eBPF: BPF keys a
// wait by (id, token), attributes it by id, and user space maps an id back to
// a node or to the log mutex. A node lock uses the node's bytenr (one in-memory
// node per block at a time); a singleton such as the log mutex uses a fixed
// constant of its owner; an address-derived id (Go's heap does not move
// objects) also works, though it may be reused once the object is freed.
// Nothing here needs ids to be unique: the token alone is unique per wait, so
// two locks that share an id still never mix their waits. Id 0 means
// "anonymous".
//
// Classes. A Class is a wait-accounting bucket: one per (tree id, level) for
// node locks, one for the log mutex. Its kind (kind.go: type, tree, level;
// NodeKind, RootKind, KindLogMutex) is passed to the begin marker, with
// KindWrite added for an exclusive acquisition, so that BPF buckets by
// class and mode; KindName maps a kind back to its class's name for the
// eBPF bridge. The span key is the one the waiting goroutine bound
// (trace.Span.Bind, a request's span while eBPF is on), 0 for none. Histogram bucket i counts waits in [2^i, 2^(i+1)) ns —
// log2 buckets, as BPF computes them — and bucket 0 also counts waits of 0 ns
// (a clock that did not move). A nil class is allowed: the markers are still
// called, with kind 0, and nothing is recorded. Metrics export reads
// Class.Snapshot; this package never calls OpenTelemetry.
//
// Concurrency. Init must happen before the lock is shared (it is a plain
// store). A Class's counters are atomics and may be recorded and snapshotted
// from any goroutine.
//
// # Invariants
//
//  1. The fast path calls no marker and records nothing: acquisitions that
//     never find the lock taken leave every counter at zero
//     (TestRWMutex_Lock_UncontendedRecordsNothing).
//  2. Every slow-path acquisition calls LockWaitBegin and then reports its
//     end through LockWaitEnds exactly once each, with the same (id, token),
//     and no two waits share a token (checked through the marker hook by
//     every test that waits, e.g. TestRWMutex_LockRLock_StressExcludes).
//  3. Each slow-path acquisition adds exactly one to Contended and to one
//     histogram bucket, so once recording has stopped, the buckets' total
//     equals Contended. A Snapshot taken during recording may see the buckets
//     ahead of Contended, never behind (record bumps the bucket first;
//     Snapshot loads Contended first).
//  4. Mutual exclusion is sync's: a writer excludes every other holder,
//     readers exclude only writers (TestRWMutex_LockRLock_StressExcludes under
//     -race).
//  5. While DeferWaitEnds is on, a wait's end is reported only after the
//     lock was released, by a flush (the timer's, FlushWaitEnds or an undo),
//     with End the time the lock was got; a full buffer reports it at once;
//     the last undo leaves nothing buffered (TestDeferWaitEnds_*, and the
//     stress test's deferred run).
package lock
