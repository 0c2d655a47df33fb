package trace

import (
	"context"
	"errors"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/attribute"
)

// scrape fetches and parses /metrics.
func scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	addr := metricsAddr.Load()
	if addr == nil {
		t.Fatal("metrics not served")
	}
	resp, err := http.Get("http://" + *addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// histogram returns the one series of family name whose labels include
// want, failing the test when there is not exactly one.
func histogram(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Histogram {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no family %s", name)
	}
	var found *dto.Histogram
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && labels[k] == v
		}
		if match {
			if found != nil {
				t.Fatalf("%s: several series match %v", name, want)
			}
			found = m.GetHistogram()
		}
	}
	if found == nil {
		t.Fatalf("%s: no series with %v", name, want)
	}
	return found
}

// cumulative returns the histogram's buckets as upper bound → cumulative
// count.
func cumulative(h *dto.Histogram) ([]float64, []uint64) {
	var bounds []float64
	var counts []uint64
	for _, b := range h.GetBucket() {
		if math.IsInf(b.GetUpperBound(), 1) {
			continue
		}
		bounds = append(bounds, b.GetUpperBound())
		counts = append(counts, b.GetCumulativeCount())
	}
	return bounds, counts
}

// TestMetrics_Scrape_PowerOfTwoBuckets proves Invariant 7: every histogram
// is served with power-of-two boundaries, and each recorded value lands in
// the bucket whose bound is the next power of two.
func TestMetrics_Scrape_PowerOfTwoBuckets(t *testing.T) {
	clearOTELEnv(t)
	mustSetup(t, Config{MetricsAddr: "127.0.0.1:0"})

	RecordCommit(1500 * time.Nanosecond) // ≤ 2^11 ns
	RecordCommit(3 * time.Millisecond)   // ≤ 2^22 ns
	RecordCommitPhase("flush", 3*time.Millisecond)
	RecordRequest("write", "ok", 100*time.Microsecond) // ≤ 2^17 ns
	RecordRequest("fsync", "EIO", time.Hour)           // beyond the last bound: +Inf
	RecordFsync(time.Millisecond)
	RecordLogSync(time.Millisecond, 3)
	RecordLockWait("fs", 0, 300*time.Nanosecond) // ≤ 2^9 ns
	RecordLockWait("fs", 1, 300*time.Nanosecond)
	RecordRingBatch(5) // ≤ 8

	fams := scrape(t)
	wantDur := DurationBounds()
	for _, name := range []string{"ustore_commit_duration_seconds", "ustore_commit_phase_duration_seconds",
		"ustore_request_duration_seconds", "ustore_fsync_duration_seconds", "ustore_log_sync_duration_seconds",
		"ustore_lock_wait_duration_seconds"} {
		f := fams[name]
		if f == nil {
			t.Fatalf("no family %s (have %d families)", name, len(fams))
		}
		for _, m := range f.GetMetric() {
			bounds, _ := cumulative(m.GetHistogram())
			if len(bounds) != len(wantDur) {
				t.Fatalf("%s: %d bounds, want %d", name, len(bounds), len(wantDur))
			}
			for i, b := range bounds {
				ns := b * 1e9
				if math.Abs(ns-float64(uint64(1)<<(DurationBucketMinLog2+i))) > 1e-6 {
					t.Fatalf("%s: bound %d is %g s, want 2^%d ns", name, i, b, DurationBucketMinLog2+i)
				}
			}
		}
	}

	// first bucket (index into bounds) counting each value
	check := func(name string, labels map[string]string, count uint64, firstBucket map[int]uint64) {
		t.Helper()
		h := histogram(t, fams, name, labels)
		if h.GetSampleCount() != count {
			t.Errorf("%s%v: count %d, want %d", name, labels, h.GetSampleCount(), count)
		}
		bounds, cum := cumulative(h)
		var want uint64
		for i := range bounds {
			want += firstBucket[i]
			if cum[i] != want {
				t.Errorf("%s%v: le=%g has %d, want %d", name, labels, bounds[i], cum[i], want)
				return
			}
		}
	}
	idx := func(log2ns int) int { return log2ns - DurationBucketMinLog2 }
	check("ustore_commit_duration_seconds", nil, 2, map[int]uint64{idx(11): 1, idx(22): 1})
	check("ustore_commit_phase_duration_seconds", map[string]string{"phase": "flush"}, 1, map[int]uint64{idx(22): 1})
	check("ustore_request_duration_seconds", map[string]string{"op": "write", "status": "ok"}, 1, map[int]uint64{idx(17): 1})
	check("ustore_request_duration_seconds", map[string]string{"op": "fsync", "status": "EIO"}, 1, nil)
	check("ustore_lock_wait_duration_seconds", map[string]string{"tree": "fs", "level": "0"}, 1, map[int]uint64{idx(9): 1})
	check("ustore_lock_wait_duration_seconds", map[string]string{"tree": "fs", "level": "1"}, 1, map[int]uint64{idx(9): 1})

	rb := fams["ustore_ring_batch_size"]
	if rb == nil {
		t.Fatalf("no ring batch family; families: %v", keys(fams))
	}
	bounds, cum := cumulative(rb.GetMetric()[0].GetHistogram())
	if len(bounds) != CountBucketMaxLog2+1 || bounds[0] != 1 || bounds[3] != 8 || cum[2] != 0 || cum[3] != 1 {
		t.Fatalf("ring batch buckets %v counts %v, want 1..4096 with the 5 under le=8", bounds, cum)
	}
	if len(rb.GetMetric()[0].GetLabel()) != 0 {
		t.Fatalf("ring batch series has labels %v, want none (no otel_scope_*)", rb.GetMetric()[0].GetLabel())
	}
}

func keys(m map[string]*dto.MetricFamily) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	return k
}

// TestRegisterCollector_Served: a collector registered after Setup (the eBPF
// bridge's way) is served next to the OTel histograms; with metrics off
// RegisterCollector does nothing.
func TestRegisterCollector_Served(t *testing.T) {
	clearOTELEnv(t)
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "ustore_test_bpf_total"})
	if err := RegisterCollector(c); err != nil {
		t.Fatalf("metrics off: %v", err)
	}
	mustSetup(t, Config{MetricsAddr: "127.0.0.1:0"})
	if err := RegisterCollector(c); err != nil {
		t.Fatal(err)
	}
	c.Add(3)
	if f := scrape(t)["ustore_test_bpf_total"]; f == nil || f.GetMetric()[0].GetCounter().GetValue() != 3 {
		t.Fatalf("registered counter not served: %v", f)
	}
}

// TestRecord_Off_NoAllocs: with metrics off the recorders allocate nothing
// (Invariant 5).
func TestRecord_Off_NoAllocs(t *testing.T) {
	if meters.Load() != nil {
		t.Fatal("metrics on")
	}
	if n := testing.AllocsPerRun(1000, recordAll); n != 0 {
		t.Fatalf("%v allocations with metrics off, want 0", n)
	}
}

// TestRecord_On_NoAllocs: with metrics on, a label value seen before costs
// no allocation either (the option cache).
func TestRecord_On_NoAllocs(t *testing.T) {
	clearOTELEnv(t)
	mustSetup(t, Config{MetricsAddr: "127.0.0.1:0"})
	recordAll()
	if n := testing.AllocsPerRun(1000, recordAll); n != 0 {
		t.Fatalf("%v allocations with metrics on, want 0", n)
	}
}

func recordAll() {
	RecordRequest("write", "ok", time.Millisecond)
	RecordFsync(time.Millisecond)
	RecordLogSync(time.Millisecond, 3)
	RecordCommit(time.Millisecond)
	RecordCommitPhase("flush", time.Millisecond)
	RecordLockWait("fs", 0, time.Microsecond)
	RecordRingBatch(8)
}

// TestOptionCache_Bounded: past optionCacheMax label values the cache stops
// growing and still answers.
func TestOptionCache_Bounded(t *testing.T) {
	var c optionCache[int]
	c.attrs = func(int) (s attribute.Set) { return s }
	for i := range 2 * optionCacheMax {
		if len(c.get(i)) != 1 {
			t.Fatal("no option")
		}
	}
	if n := len(*c.m.Load()); n != optionCacheMax {
		t.Fatalf("cache holds %d, want %d", n, optionCacheMax)
	}
}

// BenchmarkRecordRequest_Off is a recorder's cost with metrics off.
func BenchmarkRecordRequest_Off(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		RecordRequest("write", "ok", time.Millisecond)
	}
}

// BenchmarkRecordRequest_On is a recorder's cost with metrics on.
func BenchmarkRecordRequest_On(b *testing.B) {
	shutdown, err := Setup(context.Background(), Config{MetricsAddr: "127.0.0.1:0", Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = shutdown(context.Background()) }()
	b.ReportAllocs()
	for b.Loop() {
		RecordRequest("write", "ok", time.Millisecond)
	}
}

// TestMetrics_Profiling: Go's profiles are served beside /metrics only when
// asked for, and asking without a metrics address is an error, not a flag
// silently ignored.
func TestMetrics_Profiling(t *testing.T) {
	clearOTELEnv(t)
	get := func(path string) int {
		t.Helper()
		resp, err := http.Get("http://" + *metricsAddr.Load() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	stop := mustSetup(t, Config{MetricsAddr: "127.0.0.1:0"})
	if c := get("/debug/pprof/cmdline"); c != http.StatusNotFound {
		t.Fatalf("profiles served without Profiling: status %d", c)
	}
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}

	mustSetup(t, Config{MetricsAddr: "127.0.0.1:0", Profiling: true})
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/goroutine?debug=1", "/metrics"} {
		if c := get(p); c != http.StatusOK {
			t.Errorf("GET %s: status %d", p, c)
		}
	}

	if _, err := Setup(context.Background(), Config{Profiling: true}); !errors.Is(err, ErrProfilingWithoutMetrics) {
		t.Fatalf("Profiling without MetricsAddr: %v, want ErrProfilingWithoutMetrics", err)
	}
}
