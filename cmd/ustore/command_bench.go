package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"ustore/bench/ringbench"
	"ustore/ring"
)

func newBenchCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "bench",
		Short: "Run benchmarks",
		Long: "Run ustore's benchmarks. bench/ring-vs-fio.sh runs 'bench ring' beside fio on the same file;\n" +
			"bench/fsync-vs-peers.sh runs the fsync workloads on ustore, ext4, xfs and btrfs.",
		Args: noArgs,
	}
	c.AddCommand(newBenchRingCommand(), newBenchStoreCommand(), newBenchServiceCommand(), newBenchEchoServerCommand(),
		newBenchFsyncRandWriteCommand(), newBenchDirFsyncCommand(), newBenchCsumFsyncCommand(),
		newBenchCommittedCheckCommand(), newBenchMetaCommand(), newBenchSeqReadCommand(), newBenchZipfCommand())
	return c
}

func newBenchRingCommand() *cobra.Command {
	var (
		file, size, bs, engine string
		qds                    []int
		rws                    []string
		duration               time.Duration
		direct, fixed, asJSON  bool
		keep                   bool
		noDirectPath           bool
		cpuProfile, ringMode   string
		submitBatch            int
		progress               string
	)
	c := &cobra.Command{
		Use:   "ring",
		Short: "Measure the io_uring layer: IOPS, MB/s and latency per queue depth",
		Long: `Measure the io_uring layer the way fio measures a device: reads or writes of
one block size at each queue depth, on one file, for a fixed time. The file is
created and laid out (written in full) when missing or sparse, so reads hit
the device. A file the run created is removed at its end unless --keep; one
that was there before is left.

Engines (--engine):
  ring        fio's loop run on the ring's own goroutine: QD ops in flight, each
              completion refills its op and the ring resubmits it in its next
              batch, with no goroutine handoff
  ring-async  the same loop driven from another goroutine (Ring.Submit and a
              completion channel)
  ring-sync   QD goroutines each issuing one synchronous read or write (the
              ring's direct path when it is idle)
  pread       QD goroutines each calling pread/pwrite (no io_uring)`,
		Example: `  ustore bench ring
  ustore bench ring --file /mnt/big.img --size 4G --qd 1,32,128 --rw randread --duration 30s
  ustore bench ring --engine pread --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var sz, b int64
			if err := parseSizeFlags(sizeFlag{"size", size, &sz}, sizeFlag{"bs", bs, &b}); err != nil {
				return err
			}
			if err := makeParent(file); err != nil {
				return err
			}
			cfg := ringbench.Config{
				File: file, Size: sz, BS: int(b), QDs: qds, RWs: rws, Duration: duration,
				Direct: direct, Engine: engine, Fixed: fixed, NoDirect: noDirectPath,
			}
			stderr := cmd.ErrOrStderr()
			if showProgress(progress, stderr) {
				cfg.Progress = func(p ringbench.Progress) {
					// Run goes through --rw, then --qd in each.
					index := ringConfigIndex(rws, qds, p.RW, p.QD)
					fmt.Fprintf(stderr, "\r\033[K%s", benchStep(index, len(rws)*len(qds), p.Elapsed, p.Duration,
						fmt.Sprintf("%-9s qd %-4d %4.0fs/%.0fs %9.0f IOPS", p.RW, p.QD,
							p.Elapsed.Seconds(), p.Duration.Seconds(), float64(p.Ops)/p.Elapsed.Seconds())))
				}
			}
			if cfg.Progress != nil {
				fmt.Fprintf(stderr, "preparing %s (%s)...", file, size)
			}
			// The file is removed at the end when this run created it
			// (unless --keep): a 1 GiB leftover in ustore-data/ is a surprise.
			if _, err := os.Lstat(file); errors.Is(err, fs.ErrNotExist) && !keep {
				defer os.Remove(file)
			}
			stopProfile, err := startCPUProfile(cpuProfile)
			if err != nil {
				return err
			}
			defer stopProfile()
			mode, err := parseRingMode(ringMode)
			if err != nil {
				return usageError{err}
			}
			cfg.RingMode = mode
			cfg.SubmitBatch = submitBatch
			results, runErr := ringbench.Run(cfg)
			if cfg.Progress != nil {
				fmt.Fprint(stderr, "\r\033[K")
			}
			// What finished is printed even when a later configuration failed.
			if len(results) > 0 {
				if err := writeResults(cmd.OutOrStdout(), asJSON, results, func(w io.Writer) { printResults(w, results) }); err != nil {
					return err
				}
			}
			return runErr
		},
	}
	f := c.Flags()
	f.StringVar(&file, "file", "ustore-data/bench.img", "file or block device to run on (created if missing, and then removed at the end unless --keep)")
	f.BoolVar(&keep, "keep", false, "keep the --file this run created (to run again without laying it out)")
	f.StringVar(&size, "size", "1G", "bytes of the file the I/O covers")
	f.StringVar(&bs, "bs", "4k", "block size of each I/O")
	f.IntSliceVar(&qds, "qd", []int{1, 8, 32, 128}, "queue depths to run")
	f.StringSliceVar(&rws, "rw", []string{"randread", "randwrite"}, "modes to run: randread, randwrite, read, write")
	f.DurationVar(&duration, "duration", 10*time.Second, "time per configuration")
	f.BoolVar(&direct, "direct", true, "open with O_DIRECT (bypass the page cache)")
	f.BoolVar(&fixed, "fixed", true, "use registered (fixed) buffers on the ring engines")
	f.BoolVar(&noDirectPath, "no-direct-path", false, "ring-sync: send lone calls through the ring even when it is idle")
	f.StringVar(&engine, "engine", "ring", "engine: "+strings.Join(ringbench.Engines, ", "))
	f.BoolVar(&asJSON, "json", false, "print results as JSON")
	f.IntVar(&submitBatch, "submit-batch", 0, "most SQEs per io_uring_enter: 0 the ring's default (2), -1 no limit")
	f.StringVar(&ringMode, "ring-mode", "auto", "ring setup flags: auto, defer-taskrun, coop-taskrun, plain")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	f.StringVar(&progress, "progress", "auto", "show progress on stderr: auto (when a terminal), always, never")
	return c
}

// What the bench commands share: their size flags, the file they run on,
// a CPU profile, and printing results as JSON or text.

// sizeFlag is a byte-size flag: its name, its text, and where its value
// goes.
type sizeFlag struct {
	name, text string
	v          *int64
}

// parseSizeFlags parses each flag's text with parseBytes, in order; the
// first that fails is a usage error naming its flag.
func parseSizeFlags(flags ...sizeFlag) error {
	for _, f := range flags {
		v, err := parseBytes(f.text)
		if err != nil {
			return usageError{fmt.Errorf("--%s: %w", f.name, err)}
		}
		*f.v = v
	}
	return nil
}

// makeParent makes the directory that holds a benchmark's file.
func makeParent(file string) error {
	if dir := filepath.Dir(file); dir != "" {
		return os.MkdirAll(dir, 0o755)
	}
	return nil
}

// startCPUProfile writes a CPU profile to path (--cpuprofile) until stop
// is called; with no path it does nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// writeResults prints v as indented JSON (--json), or with text.
func writeResults(w io.Writer, asJSON bool, v any, text func(io.Writer)) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	text(w)
	return nil
}

func showProgress(mode string, w io.Writer) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

func printResults(w io.Writer, results []ringbench.Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "engine\trw\tqd\tIOPS\tMB/s\tp50 µs\tp99 µs\tp99.9 µs\tops/enter\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n",
			r.Engine, r.RW, r.QD, r.IOPS, r.MBps, r.P50US, r.P99US, r.P999US, r.OpsPerEnter)
	}
	tw.Flush()
}

// ringConfigIndex is the 1-based index of (rw, qd) in the order ringbench.Run
// runs the configurations: each of rws, with each of qds.
func ringConfigIndex(rws []string, qds []int, rw string, qd int) int {
	for i, r := range rws {
		for j, q := range qds {
			if r == rw && q == qd {
				return i*len(qds) + j + 1
			}
		}
	}
	return 0
}

func parseRingMode(s string) (ring.Mode, error) {
	switch s {
	case "auto", "":
		return ring.ModeAuto, nil
	case "defer-taskrun":
		return ring.ModeDeferTaskrun, nil
	case "coop-taskrun":
		return ring.ModeCoopTaskrun, nil
	case "plain":
		return ring.ModePlain, nil
	}
	return 0, fmt.Errorf("--ring-mode %q: want auto, defer-taskrun, coop-taskrun or plain", s)
}
