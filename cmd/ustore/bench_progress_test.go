package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"ustore/bench/fsyncbench"
	"ustore/bench/storebench"
)

func TestBenchStep_Cases(t *testing.T) {
	for _, tc := range []struct {
		index, count      int
		elapsed, duration time.Duration
		want              string
	}{
		{1, 8, 4 * time.Second, 10 * time.Second, "[1/8] x  ETA 1m16s"},
		{8, 8, 9500 * time.Millisecond, 10 * time.Second, "[8/8] x  ETA 1s"},
		{8, 8, 12 * time.Second, 10 * time.Second, "[8/8] x  ETA 0s"}, // past its time: finishing
		{3, 18, 0, 2 * time.Second, "[3/18] x  ETA 32s"},
	} {
		if got := benchStep(tc.index, tc.count, tc.elapsed, tc.duration, "x"); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc, got, tc.want)
		}
	}
}

// TestRingConfigIndex_RunOrder: ringbench.Run runs each --rw with each --qd.
func TestRingConfigIndex_RunOrder(t *testing.T) {
	rws, qds := []string{"randread", "randwrite"}, []int{1, 8, 32}
	n := 0
	for _, rw := range rws {
		for _, qd := range qds {
			n++
			if got := ringConfigIndex(rws, qds, rw, qd); got != n {
				t.Errorf("%s qd %d: %d, want %d", rw, qd, got, n)
			}
		}
	}
}

// TestCommand_BenchRing_RemovesCreatedFile: the file a run creates is gone
// after it unless --keep; a file that was there before stays.
func TestCommand_BenchRing_RemovesCreatedFile(t *testing.T) {
	dir := t.TempDir()
	bench := func(file string, extra ...string) {
		t.Helper()
		args := append([]string{"bench", "ring", "--file", file, "--size", "1M", "--qd", "1", "--rw", "randread",
			"--duration", "10ms", "--progress", "never"}, extra...)
		if out, err := run(t, args...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	created := filepath.Join(dir, "created.img")
	bench(created)
	if _, err := os.Stat(created); !os.IsNotExist(err) {
		t.Errorf("%s after the run that created it: %v, want it removed", created, err)
	}
	kept := filepath.Join(dir, "kept.img")
	bench(kept, "--keep")
	if fi, err := os.Stat(kept); err != nil || fi.Size() != 1<<20 {
		t.Errorf("%s with --keep: %v %v, want 1 MiB", kept, fi, err)
	}
	bench(kept) // there before this run: stays
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("%s, there before the run: %v, want it kept", kept, err)
	}
}

func TestCountETA_Cases(t *testing.T) {
	for _, tc := range []struct {
		done, total int64
		elapsed     time.Duration
		want        time.Duration
	}{
		{250, 1000, 2 * time.Second, 6 * time.Second},
		{0, 1000, time.Second, 0}, // no rate yet
		{1000, 1000, time.Second, 0},
	} {
		if got := countETA(tc.done, tc.total, tc.elapsed); got != tc.want {
			t.Errorf("%+v: %v, want %v", tc, got, tc.want)
		}
	}
}

// TestBenchProgressLines: the progress lines of bench store and the fsync
// workloads, timed and counted.
func TestBenchProgressLines(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{storeProgressLine(storebench.WindowProgress{Workload: "seqwrite", Window: 1, Windows: 3, Done: 250e6, Total: 1000e6, Elapsed: time.Second}),
			"[1/3] seqwrite  250/1000 MB   250.0 MB/s  ETA 3s"},
		{storeProgressLine(storebench.WindowProgress{Workload: "randwrite", Window: 3, Windows: 3, Done: 5000, Elapsed: 2 * time.Second, Duration: 10 * time.Second}),
			"[3/3] randwrite    2s/10s      2500 ops/s  ETA 8s"},
		{storeProgressLine(storebench.WindowProgress{Workload: "randwrite", Window: 1, Windows: 1, Done: 100, Total: 400, Elapsed: time.Second}),
			"[1/1] randwrite 100/400 overwrites       100 ops/s  ETA 3s"},
		{fsyncProgressLine(fsyncbench.Progress{Workload: "fsync-randwrite", Case: "8 jobs", Window: 2, Windows: 3, Ops: 3000, Elapsed: 3 * time.Second, Duration: 10 * time.Second}),
			"[2/3] fsync-randwrite 8 jobs:  3.0s/10.0s      1000 ops/s  ETA 17s"},
		{fsyncProgressLine(fsyncbench.Progress{Workload: "dir-fsync", Case: "create", Window: 1, Windows: 1, Ops: 20000, OpsTotal: 100000, Elapsed: 2 * time.Second}),
			"[1/1] dir-fsync create: 20000/100000     10000 ops/s  ETA 8s"},
	} {
		if tc.got != tc.want {
			t.Errorf("\n got %q\nwant %q", tc.got, tc.want)
		}
	}
}
