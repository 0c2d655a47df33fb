// Package uringdev is the io_uring Device: a backing file or block device
// driven through one ring.Ring, opened with O_DIRECT where the filesystem
// allows it (by sysdev.OpenBacking, so both backends size, sync and check the
// backing store alike), with a pool of 4096-aligned buffers registered with the ring
// (operations on them use READ_FIXED/WRITE_FIXED).
//
// Mapping of the dev contract onto the ring:
//
//	Read/Write, one IO      ring.ReadAt/WriteAt (the direct path when the ring is idle)
//	Read/Write, a batch     one ring.Do: every IO in parallel, one handoff; writes
//	                        adjacent on the device, in any order in the batch,
//	                        go as one writev (at most mergeIOsMax IOs): one request
//	                        for the device, whose cost on a virtual disk is per
//	                        request more than per byte (addIOs); a batch of
//	                        more ops than the ring admits goes in pieces of
//	                        InflightMax ops, counted after merging (run)
//	Flush                   fdatasync (ring.Fsync)
//	WriteDurable stage      the stage's writes, then an fdatasync ordered after them:
//	                        linked behind a lone write (or a lone writev), in one
//	                        submission; behind several, submitted once all have
//	                        completed (a flush covers only completed writes); the
//	                        next stage is submitted only after this one's flush
//	                        succeeded
//
// A writev takes no registered buffer (the ring has no vectored fixed op);
// the pool's buffers are fixed only when written apart — nothing in the
// store writes from them today. Reads are never merged.
//
// # Invariants
//
//  1. Every batch is checked with dev.CheckIO before a single op is queued.
//  2. A stage's flush is ordered after all of its writes (a link, or a wait
//     for their completions), and no write of the next stage is queued
//     before that flush has returned 0.
//  3. Errnos from the medium reach the caller wrapped by dev.MediumError; a
//     writev's error is reported on every IO it carried.
package uringdev
