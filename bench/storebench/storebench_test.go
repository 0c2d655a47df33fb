package storebench

import (
	"path/filepath"
	"testing"
	"time"
)

// TestRun_AllWorkloads runs every workload small, on a laid-out file, and
// checks the figures add up.
func TestRun_AllWorkloads(t *testing.T) {
	cfg := Config{
		File: filepath.Join(t.TempDir(), "dev.img"), Size: 96 << 20,
		Workloads: []string{"randwrite", "seqread", "seqwrite"},
		Total:     8 << 20, BS: 1 << 20, FileSize: 4 << 20, RandBS: 4096, Count: 2000,
		Duration: time.Second, DirtyBytes: 4 << 20,
	}
	rs, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || rs[0].Workload != "seqwrite" || rs[1].Workload != "seqread" || rs[2].Workload != "randwrite" {
		t.Fatalf("results: %+v", rs)
	}
	for _, r := range rs[:2] {
		if r.Bytes != 8<<20 || r.Ops != 8 || r.MBps <= 0 {
			t.Errorf("%s: %+v", r.Workload, r)
		}
	}
	if rs[0].ExtentsWritten == 0 || rs[0].WritebackBlocks != 2048 {
		t.Errorf("seqwrite wrote back %d blocks in %d extents, want 2048 blocks", rs[0].WritebackBlocks, rs[0].ExtentsWritten)
	}
	if r := rs[2]; r.Ops != 2000 || r.Bytes != 2000*4096 || r.ExtentsWritten == 0 || r.PrepareSeconds <= 0 {
		t.Errorf("randwrite: %+v", r)
	}
}

func TestConfig_Validate(t *testing.T) {
	ok := Config{File: "x", Size: 6 << 30, Workloads: Workloads, Total: 4 << 30, BS: 1 << 20,
		FileSize: 1 << 30, RandBS: 4096, Duration: time.Second}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(*Config){
		"workload":  func(c *Config) { c.Workloads = []string{"seqwrite", "nope"} },
		"bs":        func(c *Config) { c.BS = 3000 },
		"small dev": func(c *Config) { c.Size = 1 << 30 },
		"no time":   func(c *Config) { c.Duration = 0 },
		"rand bs":   func(c *Config) { c.RandBS = 0 },
	} {
		c := ok
		change(&c)
		if c.Validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
