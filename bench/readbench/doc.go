// Package readbench drives a running ustore server's reads through the
// client, as `ustore bench seqread` and `ustore bench zipf` run them
// (bench/seqread-vs-fio.sh and bench/zipf-cache.sh):
//
//	seqread  one file read front to back with the client's Reader (its
//	         pipeline keeps 8 reads of 1 MiB in flight, as fio's iodepth
//	         8), every 4 KiB block checked against the offset stamped in
//	         it when the file was laid out
//	zipf     readers (and a share of writers) at Zipf-distributed 4 KiB
//	         blocks over a data set larger than the server's cache, while
//	         a sampler reads the server's /metrics every interval: the
//	         page cache's hit ratio, what the cache holds, the process's
//	         RSS — a CSV row per sample
//
// Invariants:
//
//  1. Every block a workload reads is checked: its first 8 bytes are the
//     file offset it was laid out at, or (zipf, after an overwrite) the
//     offset with the write's mark in the top bit; a wrong block fails
//     the run. (checkBlock)
//  2. Memory is bounded by the configuration: one buffer per reader or
//     writer, one chunk of layout, and one sample row at a time on its
//     way to the CSV.
package readbench
