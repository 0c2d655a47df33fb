// Package ringbench measures the io_uring layer the way fio measures a
// device: random or sequential reads or writes of one block size at a fixed
// queue depth, on one file, for a fixed time, reporting IOPS, throughput and
// completion-latency percentiles. `ustore bench ring` is its CLI, and
// bench/ring-vs-fio.sh runs it beside fio on the same file.
//
// Engines, so that each design alternative is measured in the same run:
//
//	ring       fio's loop on the ring's own goroutine: QD ops in flight,
//	           each completion callback (Ring.SubmitFunc) refills its op
//	           and the ring resubmits it in its next batch — no handoff
//	ring-async the same loop driven from another goroutine through
//	           Ring.Submit and a completion channel: two handoffs per batch
//	ring-sync  QD goroutines each calling Ring.ReadAt/WriteAt, as the
//	           engine's request goroutines will (the direct path when the
//	           ring is idle, see ring/direct.go)
//	pread      QD goroutines each calling pread/pwrite (the sysdev model)
//
// # Invariants
//
//  1. Memory is bounded: the latency histogram has a fixed number of buckets
//     whatever the duration; buffers are QD × block size.
//  2. A read benchmark never reads holes: the file is laid out (written in
//     full) before any run, as fio does.
package ringbench
