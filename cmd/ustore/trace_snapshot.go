package main

// What `ustore trace` reads: the eBPF histograms a running `ustore serve
// --metrics-addr` publishes (ustore_ebpf_*), scraped over HTTP and reduced
// to one row per class with counts, sums and bucket-bound quantiles.

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// traceRow is one histogram: a lock class and mode, a phase, an opcode.
type traceRow struct {
	Name        string  `json:"name"`
	Count       uint64  `json:"count"`
	SumSeconds  float64 `json:"sum_seconds"`
	MeanSeconds float64 `json:"mean_seconds"`
	// P50Seconds and P99Seconds are bucket upper bounds (powers of two
	// of ns): the quantile lies at or below them. +Inf past the last bound.
	P50Seconds float64 `json:"p50_seconds"`
	P99Seconds float64 `json:"p99_seconds"`

	bounds []float64 // bucket upper bounds, ascending
	cum    []uint64  // cumulative counts at bounds
}

// traceSnapshot is one scrape's eBPF view.
type traceSnapshot struct {
	Time        time.Time          `json:"time"`
	LockWaits   []traceRow         `json:"lock_waits"`     // by total wait, largest first
	Phases      []traceRow         `json:"phases"`         // commit phases, commit, log_sync
	IOUring     []traceRow         `json:"io_uring"`       // by opcode
	KernelLocks []traceRow         `json:"kernel_locks"`   // by contention flags
	OffCPU      []traceRow         `json:"reactor_offcpu"` // reactor threads' off-CPU time by reason
	Events      map[string]float64 `json:"lock_wait_events"`
}

// scrapeTrace reads url (a /metrics endpoint) into a snapshot. It fails
// when the server publishes no eBPF series at all: eBPF is off there.
func scrapeTrace(ctx context.Context, url string) (*traceSnapshot, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", url, err)
	}
	s := &traceSnapshot{Time: time.Now(), Events: map[string]float64{}}
	found := false
	for name, mf := range mfs {
		if !strings.HasPrefix(name, "ustore_ebpf_") {
			continue
		}
		found = true
		switch name {
		case "ustore_ebpf_lock_wait_seconds":
			s.LockWaits = histRows(mf, "class", "mode")
		case "ustore_ebpf_phase_seconds":
			s.Phases = histRows(mf, "phase")
		case "ustore_ebpf_io_uring_op_seconds":
			s.IOUring = histRows(mf, "op")
		case "ustore_ebpf_kernel_lock_wait_seconds":
			s.KernelLocks = histRows(mf, "flags")
		case "ustore_ebpf_reactor_offcpu_seconds":
			s.OffCPU = histRows(mf, "reason")
		case "ustore_ebpf_lock_wait_events_total":
			for _, m := range mf.GetMetric() {
				s.Events[label(m, "outcome")] = m.GetCounter().GetValue()
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("%s has no ustore_ebpf_* series: is the server running with --ebpf auto|on, as root?", url)
	}
	sortBySum(s.LockWaits)
	sortByName(s.Phases)
	sortByName(s.IOUring)
	sortByName(s.KernelLocks)
	sortByName(s.OffCPU)
	return s, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// histRows turns a histogram family into rows named by the labels'
// values joined with "/".
func histRows(mf *dto.MetricFamily, labels ...string) []traceRow {
	rows := make([]traceRow, 0, len(mf.GetMetric()))
	for _, m := range mf.GetMetric() {
		h := m.GetHistogram()
		var parts []string
		for _, l := range labels {
			parts = append(parts, label(m, l))
		}
		r := traceRow{Name: strings.Join(parts, "/"), Count: h.GetSampleCount(), SumSeconds: h.GetSampleSum()}
		for _, b := range h.GetBucket() {
			r.bounds = append(r.bounds, b.GetUpperBound())
			r.cum = append(r.cum, b.GetCumulativeCount())
		}
		r.fill()
		rows = append(rows, r)
	}
	return rows
}

// fill computes the mean and quantiles from the counts.
func (r *traceRow) fill() {
	r.MeanSeconds, r.P50Seconds, r.P99Seconds = 0, 0, 0
	if r.Count == 0 {
		return
	}
	r.MeanSeconds = r.SumSeconds / float64(r.Count)
	r.P50Seconds = r.quantile(0.50)
	r.P99Seconds = r.quantile(0.99)
}

// quantile is the smallest bucket bound holding at least q of the samples;
// +Inf when they lie past the last bound. JSON cannot carry +Inf, so the
// caller sees math.MaxFloat64 there.
func (r *traceRow) quantile(q float64) float64 {
	rank := uint64(math.Ceil(q * float64(r.Count)))
	for i, c := range r.cum {
		if c >= rank {
			return r.bounds[i]
		}
	}
	return math.MaxFloat64
}

// minus returns r's samples since prev (same name): the interval's view.
func (r traceRow) minus(prev *traceRow) traceRow {
	if prev == nil || prev.Count > r.Count || len(prev.cum) != len(r.cum) {
		return r
	}
	d := traceRow{Name: r.Name, Count: r.Count - prev.Count, SumSeconds: r.SumSeconds - prev.SumSeconds, bounds: r.bounds}
	d.cum = make([]uint64, len(r.cum))
	for i := range r.cum {
		d.cum[i] = r.cum[i] - prev.cum[i]
	}
	d.fill()
	return d
}

func sortBySum(rows []traceRow) {
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].SumSeconds != rows[j].SumSeconds {
			return rows[i].SumSeconds > rows[j].SumSeconds
		}
		return rows[i].Name < rows[j].Name
	})
}

func sortByName(rows []traceRow) {
	sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
}
