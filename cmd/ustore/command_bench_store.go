package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"ustore/bench/storebench"
	"ustore/dev/devopen"
)

func newBenchStoreCommand() *cobra.Command {
	var (
		file, size, total, bs, fileSize, randBS string
		dirty, cache, nodeSize, backend         string
		workloads                               []string
		duration                                time.Duration
		count                                   int64
		seed                                    uint64
		asJSON                                  bool
		cpuProfile, progress                    string
	)
	c := &cobra.Command{
		Use:   "store",
		Short: "Measure the filesystem: sequential write and read MB/s, random overwrites",
		Long: `Measure the filesystem (store/) on a file or block device. A regular file is
first laid out to --size, written in full with 1 MiB O_DIRECT writes (not
fallocate, and never sparse), so that the store's writes and flushes pay
nothing for the backing file's allocation. Every workload group then starts
from a fresh mkfs: everything on the device is lost.

Workloads (--workload, run in this order):
  seqwrite   create a file, write --total bytes in --bs requests, then Sync;
             MB/s counts the Sync
  seqread    remount (Close, Open: nothing of the file stays in memory), then
             read the file back in --bs requests; without seqwrite the file is
             written first, untimed
  randwrite  on a fresh store: a --file-size file written and synced
             (untimed), then random --rand-bs overwrites (buffered) for
             --duration or --count, then Sync; ops/s and MB/s count the Sync

MB are 10^6 bytes, as fio's. "extents" is how many extents writeback made
during the timed phase. bench/store-vs-fio.sh runs this beside fio.`,
		Example: `  ustore bench store
  ustore bench store --workload seqwrite,seqread --total 4G --bs 1M --json
  ustore bench store --workload randwrite --file-size 1G --duration 10s --dirty 64M`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var sz, tot, b1, fsz, rbs, dirtyB, cacheB, ns int64
			if err := parseSizeFlags(sizeFlag{"size", size, &sz}, sizeFlag{"total", total, &tot}, sizeFlag{"bs", bs, &b1},
				sizeFlag{"file-size", fileSize, &fsz}, sizeFlag{"rand-bs", randBS, &rbs}, sizeFlag{"dirty", dirty, &dirtyB},
				sizeFlag{"cache", cache, &cacheB}, sizeFlag{"nodesize", nodeSize, &ns}); err != nil {
				return err
			}
			b, err := devopen.ParseBackend(backend)
			if err != nil {
				return usageError{err}
			}
			cfg := storebench.Config{
				File: file, Size: sz, Backend: b, NodeSize: int(ns),
				Workloads: workloads, Total: tot, BS: int(b1), FileSize: fsz, RandBS: int(rbs),
				Duration: duration, Count: count, Seed: seed, DirtyBytes: dirtyB, CacheBytes: cacheB,
				Logger: quietLogger(),
			}
			if err := cfg.Validate(); err != nil {
				return usageError{fmt.Errorf("storebench: %w", err)}
			}
			if err := makeParent(file); err != nil {
				return err
			}
			stderr := cmd.ErrOrStderr()
			if showProgress(progress, stderr) {
				cfg.Progress = func(phase string) { fmt.Fprintf(stderr, "\r\033[K%s\n", phase) }
				cfg.Window = func(p storebench.WindowProgress) { fmt.Fprintf(stderr, "\r\033[K%s", storeProgressLine(p)) }
			}
			stopProfile, err := startCPUProfile(cpuProfile)
			if err != nil {
				return err
			}
			defer stopProfile()
			results, runErr := storebench.Run(cfg)
			if cfg.Window != nil {
				fmt.Fprint(stderr, "\r\033[K")
			}
			// What finished is printed even when a later workload failed.
			if len(results) > 0 {
				if err := writeResults(cmd.OutOrStdout(), asJSON, results, func(w io.Writer) { storebench.WriteText(w, results) }); err != nil {
					return err
				}
			}
			return runErr
		},
	}
	f := c.Flags()
	f.StringVar(&file, "file", "ustore-data/bench-store.img", "file or block device to format and run on (created if missing; its contents are lost)")
	f.StringVar(&size, "size", "6G", "size of the device file, laid out in full")
	f.StringSliceVar(&workloads, "workload", []string{"seqwrite", "seqread", "randwrite"}, "workloads: seqwrite, seqread, randwrite")
	f.StringVar(&total, "total", "4G", "seqwrite/seqread: bytes of the file")
	f.StringVar(&bs, "bs", "1M", "seqwrite/seqread: bytes per request")
	f.StringVar(&fileSize, "file-size", "1G", "randwrite: size of the file")
	f.StringVar(&randBS, "rand-bs", "4k", "randwrite: bytes per overwrite")
	f.DurationVar(&duration, "duration", 10*time.Second, "randwrite: time of the overwrites (before the final sync)")
	f.Int64Var(&count, "count", 0, "randwrite: number of overwrites instead of --duration")
	f.Uint64Var(&seed, "seed", 1, "randwrite: seed of the offsets")
	f.StringVar(&dirty, "dirty", "0", "dirty data budget (store.Options.DirtyBytes); 0: the store's default")
	f.StringVar(&cache, "cache", "0", "tree node cache (store.Options.CacheBytes); 0: the store's default")
	f.StringVar(&nodeSize, "nodesize", "0", "tree node size for mkfs; 0: the engine's default")
	f.StringVar(&backend, "backend", "auto", "I/O backend: auto, io_uring, syscall")
	f.BoolVar(&asJSON, "json", false, "print results as JSON")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	f.StringVar(&progress, "progress", "auto", "show phases on stderr: auto (when a terminal), always, never")
	return c
}

// storeProgressLine is bench store's progress line for a window: by time
// (randwrite --duration) or by a count (bytes; overwrites with --count).
func storeProgressLine(p storebench.WindowProgress) string {
	rate := 0.0
	if p.Elapsed > 0 {
		rate = float64(p.Done) / p.Elapsed.Seconds()
	}
	switch {
	case p.Duration > 0:
		return benchStep(p.Window, p.Windows, p.Elapsed, p.Duration,
			fmt.Sprintf("%-9s %4.0fs/%.0fs %9.0f ops/s", p.Workload, p.Elapsed.Seconds(), p.Duration.Seconds(), rate))
	case p.Workload == "randwrite":
		return benchCountStep(p.Window, p.Windows, p.Done, p.Total, p.Elapsed,
			fmt.Sprintf("%-9s %d/%d overwrites %9.0f ops/s", p.Workload, p.Done, p.Total, rate))
	}
	return benchCountStep(p.Window, p.Windows, p.Done, p.Total, p.Elapsed,
		fmt.Sprintf("%-9s %.0f/%.0f MB %7.1f MB/s", p.Workload, float64(p.Done)/1e6, float64(p.Total)/1e6, rate/1e6))
}
