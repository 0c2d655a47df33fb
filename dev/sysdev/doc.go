// Package sysdev is the dev.Device for machines without io_uring (disabled
// by sysctl, refused by seccomp, an old kernel): pread, pwrite, pwritev and
// fdatasync on a regular file or a block device, issued by a fixed pool of worker
// goroutines. A batch fans out over the pool, so its IOs run in parallel, yet
// no more than Options.Workers syscalls — and so OS threads blocked in them —
// are ever in flight, however many goroutines call the device.
//
//	caller ─┐   Read: a job per IO; Write: a job per run; Flush: one job
//	caller ─┼──► jobs (chan, capacity Workers) ──► worker 1..Workers
//	caller ─┘        ▲                                  │ pread/pwrite/fdatasync
//	                 └──── WaitGroup of the batch ◄─────┘ sets IO.Err, Done
//
// A write job is a run: IOs adjacent on the device and in the batch's order,
// at most writevIOsMax, written with one pwritev (a lone IO with pwrite). A
// commit lists its nodes in offset order, so its contiguous nodes are a few
// requests rather than one per node; the run shares one result, so a failed
// pwritev fails every IO it carried.
//
// Open uses O_DIRECT when asked and the filesystem takes it; when the open,
// or a first aligned read, fails with EINVAL it falls back to buffered I/O
// through the page cache and logs one line saying so. Backend reports which:
// "pread/pwrite (O_DIRECT)" or "pread/pwrite (buffered)". Either way Flush is
// fdatasync, so durability is the same; buffered I/O only costs copies and
// page-cache memory. (tmpfs refused O_DIRECT before Linux 6.6 and takes it
// since.)
//
// Errors: EINTR is retried, EAGAIN retried a bounded number of times, a
// short transfer is continued until done, and every other errno comes back as
// dev.MediumError, so that EIO matches dev.ErrIO and ENOSPC dev.ErrNoSpace. A
// backing file that ends before the device does (truncated behind our back)
// reads as ErrTruncated, which also matches dev.ErrIO. A batch rejected before
// any I/O (alignment, range, closed device) sets each IO's Err to the error
// the call returns.
//
// Locking the file against a second user is the caller's business.
//
// # Invariants
//
//  1. Every batch passes dev.CheckIO, and an overflow-proof range check,
//     before any job is queued (checkIO).
//  2. Only the workers issue pread, pwrite, pwritev and fdatasync on the
//     device's fd (Open's probe read aside, before the workers start): at
//     most Workers syscalls are in flight, and the jobs channel holds at most
//     Workers jobs. (TestDevice_Workers_BoundInFlight.)
//  3. A call returns only after every job it queued is done, so its buffers
//     are the caller's again (the batch's WaitGroup).
//  4. A transfer ends only when all of its bytes moved or an error is
//     returned; a syscall's count is checked to lie in [0, len] (transfer,
//     and transferv for a run, which continues a short count mid-buffer).
//  5. No job is queued after Close: every call holds mu's read lock from its
//     closed check until its jobs are done, and Close holds the write lock
//     while it closes the channel, stops the workers and closes the fd once.
package sysdev
