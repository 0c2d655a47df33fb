package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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
		{"bench", "service", "--socket", "/x.sock", "--in-process"},
	} {
		if _, _, err := runIO(t, nil, args...); !isUsage(err) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

// TestCommand_BenchService_Processes: by default the run's server is
// `ustore serve` in a process of its own and the echo reference another,
// each named with its pid in the report; the cells run against them (no
// store reference: there is no store in the benchmark's process), and
// both processes are gone when the command returns.
func TestCommand_BenchService_Processes(t *testing.T) {
	bin := buildUstore(t)
	out, err := exec.Command(bin, "bench", "service", "--file", filepath.Join(t.TempDir(), "b.img"), "--size", "160M",
		"--file-size", "64k", "--op", "stat,write", "--clients", "1", "--depth", "1,2", "--duration", "40ms",
		"--warmup", "5ms", "--json", "--progress", "never").Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var rep servicebench.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var serverPID, echoPID int
	if _, err := fmt.Sscanf(rep.Socket, "a server in its own process (pid %d)", &serverPID); err != nil {
		t.Errorf("socket %q does not name the server's process: %v", rep.Socket, err)
	}
	for _, n := range rep.Notes {
		fmt.Sscanf(n, "echo: a process of its own (pid %d)", &echoPID)
	}
	if echoPID == 0 {
		t.Errorf("no note names the echo process: %q", rep.Notes)
	}
	systems := map[string]int{}
	for _, r := range rep.Results {
		systems[r.System]++
		if r.Ops == 0 || r.P50US <= 0 {
			t.Errorf("implausible: %+v", r)
		}
	}
	if systems["service"] != 4 || systems["echo"] != 4 || systems["store"] != 0 {
		t.Errorf("cells by system %v, want 4 service, 4 echo, no store", systems)
	}
	if len(rep.Ratios) != 2 {
		t.Errorf("%d ratios, want stat's and write's at depth 1", len(rep.Ratios))
	}
	for _, pid := range []int{serverPID, echoPID} {
		if pid > 0 && !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			t.Errorf("process %d outlived the run", pid)
		}
	}
}
