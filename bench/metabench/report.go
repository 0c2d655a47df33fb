package metabench

import (
	"fmt"
	"io"
	"runtime"
	"text/tabwriter"
	"time"

	"ustore/bench/fsyncbench"
)

// Report is a run's results with where they were taken: what `ustore
// bench meta --json` prints.
type Report struct {
	Workload   string `json:"workload"` // "meta"
	Date       string `json:"date"`
	GoVersion  string `json:"go_version"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	NumCPU     int    `json:"num_cpu"`
	Target     string `json:"target"`
	Label      string `json:"label,omitempty"`
	Clients    []int  `json:"clients"`
	Files      int    `json:"files"`
	BigDir     int    `json:"big_dir"`
	Deletes    int    `json:"deletes"`
	// Echo is the echo reference's median round trip (µs) with each op's
	// frame sizes; EchoNote says where it ran. Empty without one.
	Echo     map[string]float64 `json:"echo_p50_us,omitempty"`
	EchoNote string             `json:"echo_note,omitempty"`
	Results  []OpResult         `json:"results"`
	Counts   Counts             `json:"counts"`
}

// Counts are the ops that succeeded, summed over the client counts, and
// the entries left at the end: what a test checks against the
// configuration.
type Counts struct {
	Created  int64 `json:"created"`
	Stated   int64 `json:"stated"`
	Renamed  int64 `json:"renamed"`
	Unlinked int64 `json:"unlinked"`
	Mkdirs   int64 `json:"mkdirs"`
	Rmdirs   int64 `json:"rmdirs"`
	// ReadDirEntries is the entries the readdirs returned.
	ReadDirEntries int64 `json:"readdir_entries"`
	// Deleted is the unlinks in the big directory.
	Deleted int64 `json:"deleted"`
	// Left is the entries the readdirs found in each client count's
	// directory after its unlinks and rmdirs, and in the big directory
	// after it was emptied: 0 in a run that finished.
	Left int64 `json:"left"`
}

// OpResult is one op at one client count.
type OpResult struct {
	Op        string  `json:"op"`
	Clients   int     `json:"clients"`
	Ops       int64   `json:"ops"`
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	Latency
	// EchoP50US and OverEcho, at one client with an echo reference: the
	// echo's median round trip with the op's frame sizes, and the op's
	// p50 in those round trips.
	EchoP50US float64 `json:"echo_p50_us,omitempty"`
	OverEcho  float64 `json:"over_echo,omitempty"`
}

// Latency summarises latency samples in µs; percentiles are exact, from
// the sorted samples.
type Latency struct {
	MeanUS float64 `json:"mean_us"`
	P50US  float64 `json:"p50_us"`
	P99US  float64 `json:"p99_us"`
	MaxUS  float64 `json:"max_us"`
}

// summarize sorts samples (in place) and summarises them, as the fsync
// workloads do (fsyncbench.Summarize), in this report's fields.
func summarize(samples []time.Duration) Latency {
	l := fsyncbench.Summarize(samples)
	return Latency{MeanUS: l.MeanUS, P50US: l.P50US, P99US: l.P99US, MaxUS: l.MaxUS}
}

// Stamp dates the report and names where it ran.
func (r *Report) Stamp(label string) {
	r.Workload = "meta"
	r.Date = time.Now().UTC().Format(time.RFC3339)
	r.GoVersion, r.GOMAXPROCS, r.NumCPU = runtime.Version(), runtime.GOMAXPROCS(0), runtime.NumCPU()
	r.Label = label
}

// WriteText prints the report as a table.
func WriteText(w io.Writer, r *Report) {
	fmt.Fprintf(w, "meta on %s", r.Target)
	if r.Label != "" {
		fmt.Fprintf(w, " (%s)", r.Label)
	}
	fmt.Fprintf(w, "; %s, GOMAXPROCS %d, %d CPUs, %s\n", r.GoVersion, r.GOMAXPROCS, r.NumCPU, r.Date)
	fmt.Fprintf(w, "%d ops of each kind per client count, in one directory; readdir of and %d deletes in a directory of %d\n",
		r.Files, r.Deletes, r.BigDir)
	if r.EchoNote != "" {
		fmt.Fprintln(w, r.EchoNote)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\tclients\tops\tseconds\tops/s\tp50 µs\tp99 µs\techo p50 µs\tp50/echo\t")
	for _, x := range r.Results {
		echo, over := "", ""
		if x.EchoP50US > 0 {
			echo, over = fmt.Sprintf("%.1f", x.EchoP50US), fmt.Sprintf("%.2f", x.OverEcho)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f\t%.0f\t%.1f\t%.1f\t%s\t%s\t\n", x.Op, x.Clients, x.Ops, x.Seconds, x.OpsPerSec,
			x.P50US, x.P99US, echo, over)
	}
	tw.Flush()
	c := r.Counts
	fmt.Fprintf(w, "counts: %d created, %d stated, %d renamed, %d unlinked, %d mkdirs, %d rmdirs, %d entries read, %d deleted, %d left\n",
		c.Created, c.Stated, c.Renamed, c.Unlinked, c.Mkdirs, c.Rmdirs, c.ReadDirEntries, c.Deleted, c.Left)
}
