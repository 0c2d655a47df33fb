package main

import (
	"encoding/json"
	"strings"
	"testing"

	"ustore/bench/fsyncbench"
)

// TestCommand_BenchFsync_Quick runs each fsync workload, tiny, on a server
// in this process and on a directory, so that the commands cannot rot.
func TestCommand_BenchFsync_Quick(t *testing.T) {
	sock := startTestServer(t)
	dir := t.TempDir()
	for _, target := range [][]string{{"--socket", sock}, {"--dir", dir}} {
		for _, args := range [][]string{
			{"fsync-randwrite", "--jobs", "1,2", "--file-size", "128k", "--duration", "30ms"},
			{"dir-fsync", "--files", "50", "--deletes", "5"},
			{"csum-fsync", "--large-size", "1M", "--small-size", "64k", "--fsync-every", "10", "--duration", "30ms"},
			{"committed-check", "--clients", "2", "--depth", "2", "--file-size", "64k", "--rw", "randrw,fsync",
				"--duration", "30ms", "--warmup", "1ms"},
		} {
			all := append(append([]string{"bench"}, args...), target...)
			out, _, err := runIO(t, nil, append(all, "--json", "--progress", "never", "--label", "test")...)
			if err != nil {
				t.Fatalf("%v: %v\n%s", all, err, out)
			}
			var rep struct {
				fsyncbench.Report
				Results json.RawMessage `json:"results"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Workload != args[0] || rep.Label != "test" ||
				len(rep.Results) < 10 {
				t.Fatalf("%v: %v\n%s", all, err, out)
			}
			out, _, err = runIO(t, nil, append(all, "--progress", "never")...)
			if err != nil || !strings.HasPrefix(out, args[0]+" on ") {
				t.Fatalf("%v: %v\n%s", all, err, out)
			}
		}
	}
	// The client's write-behind (--write-behind): the same workloads, a
	// file's writes in flight together.
	for _, args := range [][]string{
		{"bench", "fsync-randwrite", "--jobs", "2", "--file-size", "128k", "--duration", "30ms"},
		{"bench", "csum-fsync", "--large-size", "1M", "--small-size", "64k", "--fsync-every", "10", "--duration", "30ms"},
	} {
		all := append(args, "--socket", sock, "--write-behind", "4", "--progress", "never")
		if out, _, err := runIO(t, nil, all...); err != nil || !strings.HasPrefix(out, args[1]+" on ") {
			t.Fatalf("%v: %v\n%s", all, err, out)
		}
	}
	if got := on(t, sock, nil, "ls"); got != "" {
		t.Errorf("the runs' files were left on the server: %q", got)
	}

	// Both servers of committed-check: the comparison.
	other := startTestServer(t)
	out, _, err := runIO(t, nil, "bench", "committed-check", "--socket", sock, "--ablated-socket", other, "--clients", "1",
		"--depth", "2", "--file-size", "64k", "--rw", "fsync", "--duration", "20ms", "--warmup", "1ms", "--progress", "never")
	if err != nil || !strings.Contains(out, "lock-free Committed over the locked ablation") {
		t.Fatalf("%v\n%s", err, out)
	}

	for _, args := range [][]string{
		{"bench", "fsync-randwrite", "--jobs", "0"},
		{"bench", "fsync-randwrite", "--duration", "0s"},
		{"bench", "fsync-randwrite", "--file-size", "lots"},
		{"bench", "dir-fsync", "--files", "10", "--deletes", "20"},
		{"bench", "csum-fsync", "--large-size", "1M", "--small-size", "2M"},
		{"bench", "committed-check", "--rw", "append"},
		{"bench", "committed-check", "--reps", "0"},
		{"bench", "committed-check", "--dir", dir, "--ablated-socket", sock},
		{"bench", "dir-fsync", "--dir", dir, "--metrics", "127.0.0.1:1"},
		{"bench", "dir-fsync", "--dir", dir + "/missing"},
		{"bench", "fsync-randwrite", "--dir", dir, "--write-behind", "4"},
		{"bench", "fsync-randwrite", "--socket", sock, "--write-behind", "-1"},
	} {
		if _, _, err := runIO(t, nil, args...); !isUsage(err) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}
