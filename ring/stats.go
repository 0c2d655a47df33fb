package ring

import "sync/atomic"

// Stats are the ring's counters since New. Benchmarks print them (ops per
// enter is the batching factor); tests assert on them (overflow flushes,
// resubmits).
type Stats struct {
	Enters          uint64 // io_uring_enter calls that submitted or waited
	Submitted       uint64 // SQEs handed to the kernel (including wake reads)
	Completed       uint64 // ops completed through the reactor
	Direct          uint64 // ops done by the direct path, on the caller's thread
	FixedOps        uint64 // reads/writes on the registered region
	Resubmits       uint64 // ops submitted again (EINTR/EAGAIN/short/canceled chain)
	ShortIOs        uint64 // short transfers completed by resubmission
	OverflowFlushes uint64 // enters made to flush the kernel's CQ overflow list
	Busy            uint64 // EAGAIN/EBUSY from io_uring_enter
	KernelWakes     uint64 // eventfd writes to a reactor sleeping in the kernel
	Parks           uint64 // times the idle reactor parked on its Go channel
}

type stats struct {
	enters, submitted, completed, direct, fixedOps, resubmits atomic.Uint64
	shortIOs, overflowFlushes, busy, kernelWakes, parks       atomic.Uint64
}

// Stats returns a snapshot of the counters.
func (r *Ring) Stats() Stats {
	s := &r.stats
	return Stats{
		Enters: s.enters.Load(), Submitted: s.submitted.Load(), Completed: s.completed.Load(),
		Direct: s.direct.Load(), FixedOps: s.fixedOps.Load(), Resubmits: s.resubmits.Load(),
		ShortIOs: s.shortIOs.Load(), OverflowFlushes: s.overflowFlushes.Load(), Busy: s.busy.Load(),
		KernelWakes: s.kernelWakes.Load(), Parks: s.parks.Load(),
	}
}
