// Package fsyncbench is `ustore bench fsync-randwrite | dir-fsync |
// csum-fsync | committed-check`: the workloads of four Linux fsync patches
// (named below by their titles; issue 6), written once and run on two kinds of
// target behind one interface (Target), so that ustore and the kernel's
// filesystems do exactly the same thing:
//
//	Ustore  a running ustore server, through client.Client on its Unix
//	        socket: one connection per job
//	Dir     a directory on a kernel filesystem (ext4, xfs, btrfs),
//	        through open, pwrite, pread, fsync, unlink and syncfs
//
// bench/fsync-vs-peers.sh runs each workload on ustore and on ext4, xfs
// and btrfs on loop devices on the same disk, in one run, and prints the
// ratios.
//
// # The workloads
//
// fsync-randwrite (RandWrite) is the fio job of the 2021 btrfs patch set
// "[PATCH 0/4] btrfs: a few fsync related minor improvements and a
// cleanup" (Filipe Manana, linux-btrfs, 2021): numjobs jobs (8 and 16), one file each (32 MiB
// here, 256 MiB in the patch; laid out first, as fio does), buffered
// 4 KiB random writes, an fsync after every 4 writes, time based. It
// reports fio's write IOPS and the fsyncs' latency. Offsets are uniformly
// random (fio's random map, which visits each block once per pass, is
// not reproduced).
//
// dir-fsync (DirFsync) is the test script of the 2021 btrfs bulk item
// insertion patches ("[PATCH 0/3] btrfs: speedup bulk item insertions",
// Filipe Manana, linux-btrfs, 2021): create file_1..file_N empty in a new directory (N = 1,000,000), fsync the
// directory (timed), sync (timed), delete file_1 and every (N/1000)th
// file after it, fsync the directory again (timed). The creates and the
// deletes are timed too.
//
// csum-fsync (CsumFsync) is the sysbench run of the 2011 btrfs patch "do
// not flush csum items of unchanged file data during treelog" (RFC, Liu
// Bo, linux-btrfs, 2011): one thread, 4 KiB random
// writes to two files, an fsync of each file every 100 writes, first on
// two large files (2 GiB each; 4 GiB in the patch), then on two small
// ones (4 MiB each). Each phase is laid out and synced first (sysbench's
// prepare, then sync). The fsync latency must not follow the file's size:
// the goal is large/small within CsumGoal (1.2×). Requests per second
// count writes and fsyncs, as sysbench's events.
//
// committed-check (CommittedCheck) is the fio job of the 2024 jbd2 patch
// "[PATCH v2] jbd2: speed up jbd2_transaction_committed()" (Zhang Yi,
// linux-ext4, 2024): 10 jobs × iodepth 10 on one shared file of 4 KiB
// overwrites and reads — here 10 connections, each with 10 ops in flight.
// Modes (CommittedModes): randrw (half overwrites, half reads), randwrite,
// randread, and fsync (every op an fsync of the clean, committed file:
// the Committed check alone — ustore asks it on fsync, not on reads and
// buffered writes, which is where ext4's direct I/O asks it).
// CommittedCompare runs it on two servers, one normal and one started
// with `ustore serve --ablate-committed-lock` (the check takes the
// journal's state lock), and CommittedRatios compares them.
//
// # Measuring
//
// A measured stretch is a window (window.go): an op counts when it
// completes while the window is open, whenever it began, and the window
// stays open past its duration until at least one op has counted, so that
// a short window on a slow machine still has something to report.
// Latencies are exact percentiles of every counted op. A ustore target
// can read the server's counters (the store's fsync outcomes, commits,
// log syncs: `ustore serve --metrics-addr`, scraped from /metrics); each
// result carries what moved during its run.
//
// Files, by concept: target.go (the interface), target_ustore.go and
// target_dir.go (the two kinds), counters.go (the server's counters),
// window.go (the measured window), latency.go, options.go (what every
// workload takes; laying files out), one file per workload
// (fsync_randwrite.go, dir_fsync.go, csum_fsync.go, committed_check.go,
// committed_compare.go), report.go (the tables), limits.go.
package fsyncbench
