package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"ustore/bench/metabench"
)

// TestCommand_BenchMeta_Counts runs bench meta, tiny, against a server and
// a directory, each with its echo process, and checks that every op was
// made and counted exactly once, every count's directory was empty at its
// end, and nothing is left on either target.
func TestCommand_BenchMeta_Counts(t *testing.T) {
	bin := buildUstore(t)
	sock := startTestServer(t)
	dir := t.TempDir()
	const files, bigDir, deletes = 7, 50, 4
	clients := []int{1, 3}
	for _, target := range [][]string{{"--socket", sock}, {"--dir", dir}} {
		args := append([]string{"bench", "meta", "--clients", "1,3", "--files", "7", "--big-dir", "50", "--deletes", "4",
			"--echo-round-trips", "20", "--json", "--progress", "never", "--label", "test"}, target...)
		out, err := exec.Command(bin, args...).Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("%v: %v\n%s%s", args, err, out, stderr)
		}
		var rep metabench.Report
		if err := json.Unmarshal(out, &rep); err != nil || rep.Workload != "meta" || rep.Label != "test" {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		n := int64(files * len(clients))
		want := metabench.Counts{Created: n, Stated: n, Renamed: n, Unlinked: n, Mkdirs: n, Rmdirs: n,
			ReadDirEntries: 1*bigDir + 3*(bigDir-deletes), Deleted: deletes * int64(len(clients)), Left: 0}
		if rep.Counts != want {
			t.Errorf("%v: counts %+v, want %+v", target, rep.Counts, want)
		}
		if len(rep.Results) != len(clients)*len(metabench.Ops) {
			t.Fatalf("%v: %d results, want %d", target, len(rep.Results), len(clients)*len(metabench.Ops))
		}
		for i, r := range rep.Results {
			c := clients[i/len(metabench.Ops)]
			wantOps := map[string]int64{metabench.OpReadDir: int64(c), metabench.OpDelete: deletes}[r.Op]
			if wantOps == 0 {
				wantOps = files
			}
			if r.Op != metabench.Ops[i%len(metabench.Ops)] || r.Clients != c || r.Ops != wantOps {
				t.Errorf("%v: result %d is %s at %d clients, %d ops; want %s at %d, %d ops", target, i, r.Op, r.Clients,
					r.Ops, metabench.Ops[i%len(metabench.Ops)], c, wantOps)
			}
			// At one client every op but readdir has its echo ratio.
			if hasRatio := r.EchoP50US > 0 && r.OverEcho > 0; hasRatio != (c == 1 && r.Op != metabench.OpReadDir) {
				t.Errorf("%v: %s at %d clients: echo %.1f µs, ratio %.2f", target, r.Op, c, r.EchoP50US, r.OverEcho)
			}
		}
	}
	if got := on(t, sock, nil, "ls"); got != "" {
		t.Errorf("the run's files were left on the server: %q", got)
	}
	if es, err := os.ReadDir(dir); err != nil || len(es) != 0 {
		t.Errorf("the run's files were left in %s: %v %v", dir, es, err)
	}

	for _, args := range [][]string{
		{"bench", "meta", "--clients", "0"},
		{"bench", "meta", "--files", "0"},
		{"bench", "meta", "--big-dir", "10", "--deletes", "4"},
		{"bench", "meta", "--dir", dir, "--socket", sock},
		{"bench", "meta", "--dir", filepath.Join(dir, "missing")},
	} {
		if _, _, err := runIO(t, nil, args...); !isUsage(err) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}
