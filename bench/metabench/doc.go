// Package metabench is `ustore bench meta`: metadata operations — create,
// stat, rename within a directory, unlink, mkdir and rmdir, readdir of a
// large directory, and deletes in it — run by one workload on two kinds of
// target, so that ustore and a kernel filesystem do the same thing:
//
//	Ustore  a ustore server (as users run it, `ustore serve` in a process
//	        of its own) through client.Client, one connection per client
//	Dir     a directory on a kernel filesystem (ext4 on a loop device,
//	        say) through the system calls
//
// For each client count (Config.Clients), in a directory of its own that
// all the clients share: Files creates of empty files split among the
// clients, then a stat of each (a lookup by name: stat(2) of a path), a
// rename of each to a new name in the same directory, an unlink of each,
// then Files mkdirs and as many rmdirs. Every op is a latency sample
// (exact percentiles, from the sorted samples); ops/s is the op's count
// over the wall time from the phase's start to its last client's end.
// The directory is empty at the end (a readdir counts what is left:
// Counts.Left) and removed.
//
// The big directory: BigDir empty files made once, untimed, before the
// first client count; at each count every client reads the whole of it
// (readdir), then Deletes of its files, spread through it and different
// at each count, are unlinked by the clients (the delete op). It is
// removed at the end (unless Keep).
//
// The echo reference: with Config.Echo (the echo process of `ustore bench
// service`, servicebench.EchoProcess), the median round trip of each op's
// request and response frame sizes at depth 1, and at one client each
// op's p50 in echo round trips (OpResult.OverEcho). On a kernel
// directory the same ratio says what a system call costs in socket round
// trips.
//
// Files: target.go (the targets), run.go (the workload), frames.go (the
// ops' frame sizes, for the echo), report.go (results and the table).
package metabench
