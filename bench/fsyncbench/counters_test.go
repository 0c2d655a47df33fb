package fsyncbench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

const exposition = `# HELP ustore_commit_duration_seconds Latency of transaction commits.
# TYPE ustore_commit_duration_seconds histogram
ustore_commit_duration_seconds_bucket{le="0.001"} 1
ustore_commit_duration_seconds_bucket{le="+Inf"} 4
ustore_commit_duration_seconds_sum 0.012
ustore_commit_duration_seconds_count 4
ustore_request_duration_seconds_count{op="fsync",status="ok"} 9
ustore_request_duration_seconds_sum{op="fsync",status="ok"} 0.5
ustore_log_sync_batch_size_sum 30
ustore_log_sync_batch_size_count 10
# TYPE ustore_store_fsync_commit_total counter
ustore_store_fsync_commit_total 7
ustore_store_fsync_fallbacks_total{reason="renamed_dir"} 1
go_goroutines 12
process_cpu_seconds_total 3.5
`

// TestScrape_KeepsUstoreSeriesWithoutBuckets: the endpoint's own series,
// histograms as _count and _sum, nothing of the Go runtime's.
func TestScrape_KeepsUstoreSeriesWithoutBuckets(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, exposition)
	}))
	defer srv.Close()
	for _, ep := range []string{srv.URL, strings.TrimPrefix(srv.URL, "http://"), srv.URL + "/metrics"} {
		c, err := Scrape(context.Background(), ep)
		if err != nil {
			t.Fatalf("%s: %v", ep, err)
		}
		if len(c) != 8 || c["ustore_store_fsync_commit_total"] != 7 || c[`ustore_request_duration_seconds_count{op="fsync",status="ok"}`] != 9 {
			t.Fatalf("%s: %v", ep, c)
		}
	}
	if _, err := Scrape(context.Background(), srv.URL+"/nothing"); err == nil {
		t.Fatal("a 404 scraped")
	}
}

// TestCounters_SubSummary: what moved, readable — a histogram's count and
// mean, a counter's change; request latencies and what did not move left
// out.
func TestCounters_SubSummary(t *testing.T) {
	before := Counters{"ustore_commit_duration_seconds_count": 2, "ustore_commit_duration_seconds_sum": 0.002,
		"ustore_store_fsync_commit_total": 5, "ustore_store_inodes": 3}
	after := Counters{"ustore_commit_duration_seconds_count": 6, "ustore_commit_duration_seconds_sum": 0.014,
		"ustore_store_fsync_commit_total": 5, "ustore_store_inodes": 3, "ustore_store_fsync_logged_total": 40,
		"ustore_log_sync_batch_size_count": 10, "ustore_log_sync_batch_size_sum": 35,
		`ustore_request_duration_seconds_count{op="fsync",status="ok"}`: 9}
	d := after.Sub(before)
	if _, ok := d["ustore_store_fsync_commit_total"]; ok || d["ustore_store_fsync_logged_total"] != 40 {
		t.Fatalf("delta %v", d)
	}
	got := d.Summary()
	want := []string{"commit_duration_seconds: 4, mean 3.00 ms", "log_sync_batch_size: 10, mean 3.50",
		"round trips of data per logged fsync: 0.00", "store_fsync_logged_total +40"}
	if !slices.Equal(got, want) {
		t.Fatalf("summary %q, want %q", got, want)
	}
	if Counters(nil).Sub(before) != nil {
		t.Fatal("a target without counters has a delta")
	}
}

// TestCounters_Summary_RoundTrips: the store's round-trip counters become
// figures per log sync and per logged fsync.
func TestCounters_Summary_RoundTrips(t *testing.T) {
	d := Counters{"ustore_store_log_syncs_total": 10, "ustore_store_fsync_logged_total": 40,
		"ustore_store_device_round_trips_log_sync_total": 40, "ustore_store_device_round_trips_fsync_data_total": 40}
	want := []string{"round trips of data per logged fsync: 1.00", "round trips per log sync: 4.00",
		"store_device_round_trips_fsync_data_total +40", "store_device_round_trips_log_sync_total +40",
		"store_fsync_logged_total +40", "store_log_syncs_total +10"}
	if got := d.Summary(); !slices.Equal(got, want) {
		t.Fatalf("summary %q, want %q", got, want)
	}
}
