package servicebench

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is one cell's figures. Latencies are in µs.
type Result struct {
	System    string  `json:"system"`
	Op        string  `json:"op"`
	Clients   int     `json:"clients"`
	Depth     int     `json:"depth"`
	Ops       int64   `json:"ops"`
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	MeanUS    float64 `json:"mean_us"`
	P50US     float64 `json:"p50_us"`
	P99US     float64 `json:"p99_us"`
	P999US    float64 `json:"p999_us"`
	MaxUS     float64 `json:"max_us"`
}

// Ratio compares the service's median round trip at depth 1 with the
// echo's (the floor) and the store's (the work itself).
type Ratio struct {
	Op           string  `json:"op"`
	Clients      int     `json:"clients"`
	ServiceP50US float64 `json:"service_p50_us"`
	StoreP50US   float64 `json:"store_p50_us,omitempty"`
	EchoP50US    float64 `json:"echo_p50_us"`
	// ServiceOverEcho is the protocol round trip in echo round trips.
	ServiceOverEcho float64 `json:"service_over_echo"`
	// AddedOverEcho is what the service adds beyond the store's own time,
	// in echo round trips: (service − store) / echo. The goal is ≤ 2.
	AddedOverEcho float64 `json:"added_over_echo,omitempty"`
}

// Goal is the most AddedOverEcho may be at depth 1.
const Goal = 2.0

// Report is a run: where it ran, every cell, and the ratios.
type Report struct {
	Date       string   `json:"date"`
	GoVersion  string   `json:"go_version"`
	GOMAXPROCS int      `json:"gomaxprocs"`
	NumCPU     int      `json:"num_cpu"`
	Device     string   `json:"device"`
	Socket     string   `json:"socket"`
	Duration   string   `json:"duration_per_cell"`
	BS         int      `json:"bs"`
	FileSize   int64    `json:"file_size"`
	Notes      []string `json:"notes,omitempty"`
	Results    []Result `json:"results"`
	Ratios     []Ratio  `json:"ratios"`
}

// result turns a cell's samples into figures.
func result(system, op string, clients, depth int, elapsed time.Duration, ws []*worker) Result {
	var all []uint32
	for _, w := range ws {
		all = append(all, w.lat...)
	}
	slices.Sort(all)
	r := Result{System: system, Op: op, Clients: clients, Depth: depth, Ops: int64(len(all)), Seconds: elapsed.Seconds()}
	if len(all) == 0 {
		return r
	}
	var sum float64
	for _, v := range all {
		sum += float64(v)
	}
	pct := func(p float64) float64 {
		i := min(int(p*float64(len(all))), len(all)-1)
		return float64(all[i]) / 1e3
	}
	r.OpsPerSec = float64(len(all)) / elapsed.Seconds()
	r.MeanUS = sum / float64(len(all)) / 1e3
	r.P50US, r.P99US, r.P999US = pct(0.50), pct(0.99), pct(0.999)
	r.MaxUS = float64(all[len(all)-1]) / 1e3
	return r
}

// ratios compares service, store and echo for each op and client count at
// depth 1.
func ratios(rs []Result) []Ratio {
	find := func(system, op string, clients int) *Result {
		for i := range rs {
			r := &rs[i]
			if r.System == system && r.Op == op && r.Clients == clients && r.Depth == 1 && r.Ops > 0 {
				return r
			}
		}
		return nil
	}
	var out []Ratio
	for _, r := range rs {
		if r.System != "service" || r.Depth != 1 {
			continue
		}
		e := find("echo", r.Op, r.Clients)
		if e == nil || r.Ops == 0 {
			continue
		}
		q := Ratio{Op: r.Op, Clients: r.Clients, ServiceP50US: r.P50US, EchoP50US: e.P50US,
			ServiceOverEcho: r.P50US / e.P50US}
		if s := find("store", r.Op, r.Clients); s != nil {
			q.StoreP50US = s.P50US
			q.AddedOverEcho = (r.P50US - s.P50US) / e.P50US
		}
		out = append(out, q)
	}
	return out
}

// WriteText prints the report: one row per (op, clients, depth) with each
// system's figures, then the ratios at depth 1.
func WriteText(w io.Writer, rep *Report) {
	fmt.Fprintf(w, "device: %s\nserver: %s\n", rep.Device, rep.Socket)
	fmt.Fprintf(w, "%s, GOMAXPROCS %d, %d CPUs; %s per cell; %d-byte ops on %d-byte files\n",
		rep.GoVersion, rep.GOMAXPROCS, rep.NumCPU, rep.Duration, rep.BS, rep.FileSize)
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	type key struct {
		op             string
		clients, depth int
	}
	var keys []key
	by := map[key]map[string]Result{}
	for _, r := range rep.Results {
		k := key{r.Op, r.Clients, r.Depth}
		if by[k] == nil {
			by[k] = map[string]Result{}
			keys = append(keys, k)
		}
		by[k][r.System] = r
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\tclients\tdepth\tservice ops/s\tp50 µs\tp99 µs\tp99.9 µs\tstore ops/s\tp50 µs\tp99 µs\techo ops/s\tp50 µs\tp99 µs\tservice/echo p50\t")
	for _, k := range keys {
		m := by[k]
		s, hasS := m["service"]
		st, hasSt := m["store"]
		e, hasE := m["echo"]
		row := []string{k.op, strconv.Itoa(k.clients), strconv.Itoa(k.depth)}
		row = append(row, cols(s, hasS, true)...)
		row = append(row, cols(st, hasSt, false)...)
		row = append(row, cols(e, hasE, false)...)
		ratio := "-"
		if hasS && hasE && e.P50US > 0 {
			ratio = fmt.Sprintf("%.2f", s.P50US/e.P50US)
		}
		row = append(row, ratio)
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
	if len(rep.Ratios) == 0 {
		return
	}
	fmt.Fprintf(w, "\nat depth 1 (medians): the protocol round trip vs the echo round trip (the floor)\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\tclients\tservice µs\tstore µs\techo µs\tservice/echo\t(service−store)/echo\tgoal ≤ 2\t")
	for _, q := range rep.Ratios {
		store, added, goal := "-", "-", "-"
		if q.StoreP50US > 0 {
			store = fmt.Sprintf("%.1f", q.StoreP50US)
			added = fmt.Sprintf("%.2f", q.AddedOverEcho)
			goal = "met"
			if q.AddedOverEcho > Goal {
				goal = "not met"
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%s\t%.1f\t%.2f\t%s\t%s\t\n", q.Op, q.Clients, q.ServiceP50US, store, q.EchoP50US,
			q.ServiceOverEcho, added, goal)
	}
	tw.Flush()
}

func cols(r Result, ok, p999 bool) []string {
	n := 3
	if p999 {
		n = 4
	}
	if !ok {
		return slices.Repeat([]string{"-"}, n)
	}
	c := []string{fmt.Sprintf("%.0f", r.OpsPerSec), fmt.Sprintf("%.1f", r.P50US), fmt.Sprintf("%.1f", r.P99US)}
	if p999 {
		c = append(c, fmt.Sprintf("%.1f", r.P999US))
	}
	return c
}
