package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommand_BenchRead_Quick runs `bench seqread` and `bench zipf`, tiny,
// on a server in this process, so that the commands cannot rot: seqread
// lays its file out once and reads it back checked, zipf lays out its
// files and writes a CSV row per sample (from a stand-in /metrics: the
// in-process server serves none).
func TestCommand_BenchRead_Quick(t *testing.T) {
	sock := startTestServer(t)
	for range 2 { // the second run finds the file laid out
		out, _, err := runIO(t, nil, "bench", "seqread", "--socket", sock, "--size", "3M", "--reps", "2", "--json")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var rs []struct {
			Bytes int64 `json:"bytes"`
		}
		if err := json.Unmarshal([]byte(out), &rs); err != nil || len(rs) != 2 || rs[0].Bytes != 3<<20 {
			t.Fatalf("%v\n%s", err, out)
		}
	}

	metrics := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for _, s := range []string{"ustore_store_cache_page_hits_total", "ustore_store_cache_page_misses_total",
			"ustore_store_cache_page_bytes", "ustore_store_cache_node_bytes", "ustore_store_cache_budget_bytes",
			"ustore_store_dirty_bytes", "process_resident_memory_bytes"} {
			fmt.Fprintf(w, "%s 1\n", s)
		}
	}))
	defer metrics.Close()
	csv := filepath.Join(t.TempDir(), "z.csv")
	zipf := []string{"bench", "zipf", "--socket", sock, "--data", "512k", "--files", "4", "--workers", "2"}
	if out, _, err := runIO(t, nil, append(zipf, "--layout-only")...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	out, _, err := runIO(t, nil, append(zipf, "--metrics", metrics.URL, "--duration", "250ms", "--interval", "50ms",
		"--csv", csv, "--json")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var res struct{ Reads, Writes uint64 }
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Reads == 0 {
		t.Fatalf("%v\n%s", err, out)
	}
	b, err := os.ReadFile(csv)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "seconds,reads,") {
		t.Fatalf("CSV:\n%s", b)
	}

	for _, args := range [][]string{
		{"bench", "seqread", "--socket", sock, "--size", "0"},
		{"bench", "seqread", "--socket", sock, "--reps", "0"},
		{"bench", "zipf", "--socket", sock, "--data", "512k", "--files", "4"}, // no --metrics
		{"bench", "zipf", "--socket", sock, "--s", "1"},
		{"bench", "zipf", "--socket", sock, "--data", "5k", "--files", "4"},
	} {
		if _, _, err := runIO(t, nil, args...); !isUsage(err) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}
