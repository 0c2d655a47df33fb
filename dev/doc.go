// Package dev is the device interface the engine sees: a fixed-size array of
// 4096-byte sectors that takes batches of reads and writes at offsets and makes
// them durable on Flush. The engine, the journal and the log tree import only
// this package, never the io_uring layer (ring) behind one implementation.
//
// Implementations:
//
//   - dev/uringdev: io_uring through package ring, O_DIRECT where the
//     filesystem allows it, buffers from a pool registered with the ring.
//   - dev/sysdev: pread/pwrite/fdatasync on a bounded pool of goroutines, for
//     machines where io_uring is unavailable.
//   - dev/memdev: in memory; records every write and flush, simulates a power
//     cut (Crash) and injects errors. The crash tests stand on it.
//
// dev/devopen picks uringdev or sysdev for a path and says why; it lives in its
// own package so that importing dev never links the io_uring layer.
//
// # Contract
//
// Alignment. Every offset is a multiple of SectorSize (4096), every buffer
// length a positive multiple of it, and every buffer's address is 4096-aligned (AlignedBuffer, or a
// Device's Buffers pool, gives such memory). A request outside the device or
// not aligned fails with ErrAlignment or ErrOutOfRange before any I/O is issued;
// every IO of a rejected batch then carries that error. An empty batch succeeds.
//
// Overlap. Read, Write, Flush and WriteDurable may be called from any number
// of goroutines at once. The operations of one batch run in any order and
// may run in parallel; two in-flight writes to overlapping ranges (in one batch
// or in two concurrent calls) leave either one's data in each sector: the
// caller must not do that. A buffer belongs to the device from the call until
// it returns, and must not be touched by the caller during that time.
//
// Completion. A call returns when every operation of its batch has completed.
// It returns nil when all succeeded; otherwise it returns the first error in
// batch order and each IO carries its own Err (nil for those that succeeded).
// An implementation may carry several adjacent writes of a batch as one
// request (a writev); those IOs share that request's result, so one failed
// sector fails every IO it carried, never fewer.
// A short transfer is completed by the implementation, never returned.
//
// Durability. A write that has completed is in the device's volatile cache:
// a power cut may lose it, keep it, or keep any subset of its TornSize
// (512-byte) pieces — even a single-sector write may tear, since a sector is
// eight pieces. When Flush returns nil, every write that had
// completed before Flush was called survives a power cut. WriteDurable(stages)
// writes each stage's IOs in parallel and flushes before the next stage starts,
// so nothing of stage i+1 reaches the medium before all of stage i is durable:
// that is the commit sequence (nodes; flush; superblock; flush).
//
// Errors. EIO and ENOSPC from the medium come back wrapped and match
// errors.Is(err, ErrIO) or errors.Is(err, ErrNoSpace) as well as the errno.
// A failed write leaves its sectors' content unknown (old, new, or a mix of
// 512-byte pieces). After a failed Flush, the state of writes completed before it is unknown
// (as with fsync on Linux): the caller must treat the device as failed for
// durability purposes. After Close, every call (Close included) returns
// ErrClosed.
//
// # Invariants
//
//  1. Offsets and lengths handed to an implementation are checked against
//     SectorSize and Size by CheckIO before any I/O is issued.
//  2. A call never returns while any operation of its batch is still in flight
//     (the buffer is the caller's again once the call returns).
//  3. WriteDurable never issues a write of stage i+1 before the flush that
//     ends stage i has succeeded.
package dev
