package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestMount_Sysbench: sysbench fileio on the mount with its own
// validation (each block it writes carries a checksum and its offset,
// checked on every read): prepare, random reads and writes with an fsync
// every 4 requests bounded by a count of events, cleanup; the files and
// then fsck --data.
func TestMount_Sysbench(t *testing.T) {
	notUnderRace(t)
	sysbench := needTool(t, "sysbench", "sysbench")
	ms := newMountedStore(t)
	dir := filepath.Join(ms.mnt(), "sysbench")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const files, events = 4, 4000
	common := []string{"fileio", "--file-num=" + strconv.Itoa(files), "--file-total-size=8M", "--file-block-size=4096",
		"--file-test-mode=rndrw", "--file-fsync-freq=4", "--validate=on", "--events=" + strconv.Itoa(events), "--time=0"}
	sb := func(step string) string {
		t.Helper()
		cmd := exec.Command(sysbench, append(common, step)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(out), "FATAL") {
			t.Fatalf("sysbench %s %s: %v\n%s", strings.Join(common, " "), step, err, out)
		}
		return string(out)
	}
	sb("prepare")
	out := sb("run")
	for what, re := range map[string]string{
		"events": `total number of events:\s+(\d+)`,
		"reads":  `reads/s:\s+([0-9.]+)`,
		"writes": `writes/s:\s+([0-9.]+)`,
		"fsyncs": `fsyncs/s:\s+([0-9.]+)`,
	} {
		m := regexp.MustCompile(re).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("sysbench run says no %s:\n%s", what, out)
		}
		if n, _ := strconv.ParseFloat(m[1], 64); n <= 0 || (what == "events" && n != events) {
			t.Fatalf("sysbench run: %s %s:\n%s", what, m[1], out)
		}
	}
	if !strings.Contains(out, "Validation checks: on") {
		t.Fatalf("sysbench ran without validation:\n%s", out)
	}
	sb("cleanup")
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Fatalf("after cleanup: %d entries (%v)", len(ents), err)
	}
	ms.downAndFsck(t)
}
