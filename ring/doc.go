// Package ring is ustore's io_uring layer, written directly over
// golang.org/x/sys/unix (no Go io_uring library is available to us, and the
// ABI is small: abi.go, checked at compile time and by TestABI_Layout).
//
// One Ring is one io_uring owned by one goroutine, the reactor, locked to its
// OS thread (IORING_SETUP_SINGLE_ISSUER|DEFER_TASKRUN ties the ring to the
// thread that created it; older kernels step down to COOP_TASKRUN, then to no
// flags). Any goroutine hands operations to it:
//
//	Do(ops...)             a batch, synchronous: one handoff for many ops
//	Submit(done, ops...)   a batch, asynchronous: completions sent to done
//	SubmitFunc(then, ...)  asynchronous: then(op) runs on the reactor, and may
//	                       refill the op to resubmit it with no handoff
//	ReadAt/WriteAt/Fsync   a lone synchronous op: when the ring is idle it is
//	                       done on the caller's thread (the direct path),
//	                       since waking a thread-locked goroutine costs more
//	                       than the I/O (docs/design/ring.md)
//
// The reactor's turn:
//
//	submitters ──► queue (mutex, bounded by InflightMax: backpressure)
//	                 │ take all
//	                 ▼
//	pending ──► place: one SQE per op, chains whole, user_data = slot
//	                 │
//	                 ▼
//	io_uring_enter(to_submit, wait = nothing else to do ? 1 : 0, GETEVENTS)
//	                 │
//	                 ▼
//	reap CQEs ──► handle: done | resubmit (EINTR, EAGAIN, EBUSY, short) |
//	              error to the caller | assertion (EFAULT, EINVAL we caused)
//	                 │
//	                 ▼
//	complete waiters (pooled cap-1 channels, never blocking), release admission
//
// While ops are in flight the reactor sleeps in io_uring_enter with a read
// of an eventfd armed; a submitter writes the eventfd only after winning the
// CAS of the reactor's state from "in kernel" to "running". With nothing in
// flight it parks on a Go channel instead.
//
// # Invariants
//
//  1. Only the reactor goroutine touches the SQ, the CQ, the slot table and
//     the pending list; submitters touch only the queue, under mu.
//  2. An op, and every buffer and iovec it references, is reachable from the
//     slot table from the moment its SQE is filled until its CQE is reaped:
//     the addresses in SQEs are integers the GC does not see. user_data is a
//     slot index, never a pointer.
//  3. Admitted ops (queued or in the kernel) never exceed InflightMax; by
//     default InflightMax < CQ entries, so the CQ cannot overflow. When a
//     configuration allows more, IORING_SQ_CQ_OVERFLOW is flushed with an
//     enter and no completion is lost (the kernel's NODROP, required at New).
//  4. A linked chain is placed into the SQ whole or not at all; a chain that
//     is broken by a retryable error or a short transfer is resumed from that
//     op; one broken by any other error completes with ErrCanceled for the
//     ops the kernel canceled.
//  5. A CQE's content is copied out before the CQ head moves past it.
//  6. Close returns only after every admitted op has completed and the wake
//     read has been reaped: the kernel never writes into freed memory.
package ring
