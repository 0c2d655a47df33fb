package main

import (
	"encoding/json"
	"strings"
	"testing"

	"ustore/bench/servicebench"
)

// TestCommand_BenchService_Quick runs the whole matrix, tiny, on a memdev,
// and once against an external server, so that the command cannot rot.
func TestCommand_BenchService_Quick(t *testing.T) {
	out, _, err := runIO(t, nil, "bench", "service", "--memdev", "--size", "160M", "--file-size", "64k",
		"--clients", "1,2", "--depth", "1,3", "--duration", "40ms", "--warmup", "5ms", "--json", "--progress", "never")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var rep servicebench.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.Results) != 3*2*2*3 || !strings.HasPrefix(rep.Device, "memdev") {
		t.Fatalf("%d results on %q", len(rep.Results), rep.Device)
	}
	for _, r := range rep.Results {
		if r.Ops == 0 || r.OpsPerSec <= 0 || r.P50US <= 0 || r.P99US < r.P50US || r.P999US < r.P99US {
			t.Errorf("implausible: %+v", r)
		}
	}
	if len(rep.Ratios) != 3*2 {
		t.Errorf("%d ratios, want one per op and client count", len(rep.Ratios))
	}

	// An external server; the table.
	sock := startTestServer(t)
	out, _, err = runIO(t, nil, "bench", "service", "--socket", sock, "--op", "stat,read", "--file-size", "16k",
		"--clients", "2", "--depth", "1", "--duration", "30ms", "--progress", "never")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"service ops/s", "store: skipped", "stat", "read", "service/echo"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if got := on(t, sock, nil, "ls"); got != "" {
		t.Errorf("the run's files were left on the server: %q", got)
	}

	for _, args := range [][]string{
		{"bench", "service", "--op", "delete"},
		{"bench", "service", "--clients", "0"},
		{"bench", "service", "--depth", "1000"},
		{"bench", "service", "--duration", "0s"},
		{"bench", "service", "--bs", "lots"},
		{"bench", "service", "--memdev", "--size", "1M"},
		{"bench", "service", "--socket", "/x.sock", "--memdev"},
	} {
		if _, _, err := runIO(t, nil, args...); !isUsage(err) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}
