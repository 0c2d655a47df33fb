package fsyncbench

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is one invocation's results with where they were taken: what
// `ustore bench fsync-* --json` prints.
type Report struct {
	Workload   string `json:"workload"`
	Date       string `json:"date"`
	GoVersion  string `json:"go_version"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	NumCPU     int    `json:"num_cpu"`
	Target     string `json:"target"`
	Label      string `json:"label,omitempty"` // the caller's name for the target ("ext4", "btrfs -n 64K")
	// Results is the workload's: []RandWriteResult, DirFsyncResult,
	// CsumFsyncResult or []CommittedResult.
	Results any `json:"results"`
}

// NewReport starts a report of workload on t.
func NewReport(workload string, t Target, label string) *Report {
	return &Report{
		Workload: workload, Date: time.Now().UTC().Format(time.RFC3339), GoVersion: runtime.Version(),
		GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU(), Target: t.Name(), Label: label,
	}
}

// WriteText prints the report as tables.
func WriteText(w io.Writer, rep *Report) {
	fmt.Fprintf(w, "%s on %s", rep.Workload, rep.Target)
	if rep.Label != "" {
		fmt.Fprintf(w, " (%s)", rep.Label)
	}
	fmt.Fprintf(w, "; %s, GOMAXPROCS %d, %d CPUs, %s\n", rep.GoVersion, rep.GOMAXPROCS, rep.NumCPU, rep.Date)
	switch r := rep.Results.(type) {
	case []RandWriteResult:
		writeRandWrite(w, r)
	case DirFsyncResult:
		writeDirFsync(w, r)
	case CsumFsyncResult:
		writeCsumFsync(w, r)
	case []CommittedResult:
		writeCommitted(w, r)
	}
}

func table(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
}

// writeCounters prints what moved on the server, under a heading.
func writeCounters(w io.Writer, what string, c Counters) {
	if len(c) == 0 {
		return
	}
	fmt.Fprintf(w, "server counters, %s:\n", what)
	for _, l := range c.Summary() {
		fmt.Fprintf(w, "  %s\n", l)
	}
}

func writeRandWrite(w io.Writer, rs []RandWriteResult) {
	if len(rs) == 0 {
		return
	}
	fmt.Fprintf(w, "%d-byte random writes, fsync every %d writes, one %d-byte file per job\n",
		rs[0].BS, rs[0].FsyncEvery, rs[0].FileSize)
	tw := table(w)
	fmt.Fprintln(tw, "jobs\tseconds\twrite IOPS\tKiB/s\tfsyncs\tfsync mean µs\tp50 µs\tp90 µs\tp99 µs\tp99.9 µs\tmax µs\t")
	for _, r := range rs {
		l := r.Fsync
		fmt.Fprintf(tw, "%d\t%.1f\t%.0f\t%.0f\t%d\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t\n", r.Jobs, r.Seconds, r.WriteIOPS,
			r.WriteKiBps, r.Fsyncs, l.MeanUS, l.P50US, l.P90US, l.P99US, l.P999US, l.MaxUS)
	}
	tw.Flush()
	for _, r := range rs {
		writeCounters(w, fmt.Sprintf("%d jobs", r.Jobs), r.Counters)
	}
}

func writeDirFsync(w io.Writer, r DirFsyncResult) {
	fmt.Fprintf(w, "%d empty files created in one directory, then %d deleted (every %dth); times in ms\n",
		r.Files, r.Deleted, r.Files/max(r.Deleted, 1))
	tw := table(w)
	fmt.Fprintln(tw, "create\tdir fsync after create\tsync\tdelete\tdir fsync after delete\t")
	fmt.Fprintf(tw, "%.0f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", r.CreateMS, r.FsyncAfterCreateMS, r.SyncMS, r.DeleteMS,
		r.FsyncAfterDeleteMS)
	tw.Flush()
	for _, k := range []string{"create", "fsync_after_create", "sync", "delete", "fsync_after_delete"} {
		writeCounters(w, strings.ReplaceAll(k, "_", " "), r.Counters[k])
	}
}

func writeCsumFsync(w io.Writer, r CsumFsyncResult) {
	fmt.Fprintf(w, "%d-byte random writes to %d files, an fsync of each every %d writes\n", r.BS, r.Large.Files, r.FsyncEvery)
	tw := table(w)
	fmt.Fprintln(tw, "files\tfile size\tseconds\treq/s\twrites/s\tfsyncs\tfsync mean µs\tp50 µs\tp99 µs\tmax µs\t")
	for _, p := range []struct {
		name string
		ph   CsumPhase
	}{{"large", r.Large}, {"small", r.Small}} {
		l := p.ph.Fsync
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.0f\t%.0f\t%d\t%.0f\t%.0f\t%.0f\t%.0f\t\n", p.name, sizeString(p.ph.FileSize),
			p.ph.Seconds, p.ph.RequestsPerSec, p.ph.WritesPerSec, p.ph.Fsyncs, l.MeanUS, l.P50US, l.P99US, l.MaxUS)
	}
	tw.Flush()
	verdict := "met"
	if r.P50Ratio > CsumGoal || r.MeanRatio > CsumGoal {
		verdict = "not met"
	}
	fmt.Fprintf(w, "fsync latency, large over small: p50 %.2f×, mean %.2f× (goal ≤ %.1f×: %s)\n", r.P50Ratio, r.MeanRatio,
		CsumGoal, verdict)
	writeCounters(w, "large files", r.Large.Counters)
	writeCounters(w, "small files", r.Small.Counters)
}

func writeCommitted(w io.Writer, rs []CommittedResult) {
	if len(rs) == 0 {
		return
	}
	fmt.Fprintf(w, "%d clients × %d in flight, %d-byte ops on one %s file\n", rs[0].Clients, rs[0].Depth, rs[0].BS,
		sizeString(rs[0].FileSize))
	tw := table(w)
	fmt.Fprintln(tw, "server\trw\tseconds\tops/s\tMB/s\twrites\treads\tfsyncs\tp50 µs\tp99 µs\t")
	for _, r := range rs {
		label := r.Label
		if label == "" {
			label = r.Target
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.0f\t%.1f\t%d\t%d\t%d\t%.0f\t%.0f\t\n", label, r.RW, r.Seconds, r.OpsPerSec, r.MBps,
			r.Writes, r.Reads, r.Fsyncs, r.Latency.P50US, r.Latency.P99US)
	}
	tw.Flush()
	if q := CommittedRatios(rs); len(q) > 0 {
		fmt.Fprintln(w, "lock-free Committed over the locked ablation (ops/s, median of the repetitions):")
		for _, x := range q {
			fmt.Fprintf(w, "  %-9s %.0f / %.0f = %.3f×\n", x.RW, x.LockFree, x.Locked, x.Ratio)
		}
	}
	for _, r := range rs {
		writeCounters(w, r.Label+" "+r.RW, r.Counters)
	}
}

// sizeString writes a byte count in binary units.
func sizeString(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
