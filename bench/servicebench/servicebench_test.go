package servicebench

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRun_File runs a small matrix on a laid-out device file, with the
// server in this process, and checks the figures add up.
func TestRun_File(t *testing.T) {
	var phases []string
	cfg := Config{
		File: filepath.Join(t.TempDir(), "dev.img"), Size: 96 << 20, InProcess: true,
		Clients: []int{1, 3}, Depths: []int{1, 4}, Duration: 50 * time.Millisecond, Warmup: 5 * time.Millisecond,
		FileSize: 256 << 10,
		Phase:    func(s string) { phases = append(phases, s) },
	}
	var last Progress
	cfg.Progress = func(p Progress) { last = p }
	rep, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 3*2*2*3 {
		t.Fatalf("%d results", len(rep.Results))
	}
	if last.Cell != last.Cells || last.Cells != 36 {
		t.Errorf("last progress %+v", last)
	}
	if !strings.Contains(rep.Device, "laid out") || len(phases) == 0 || !strings.Contains(phases[0], "laying out") {
		t.Errorf("device %q, phases %q", rep.Device, phases)
	}
	for _, r := range rep.Results {
		if r.Ops == 0 || r.P50US <= 0 || r.P99US < r.P50US || r.MaxUS < r.P999US || r.MeanUS <= 0 {
			t.Errorf("implausible %+v", r)
		}
	}
	if len(rep.Ratios) != 3*2 {
		t.Fatalf("ratios %+v", rep.Ratios)
	}
	for _, q := range rep.Ratios {
		if q.ServiceOverEcho <= 0 || q.StoreP50US <= 0 || q.EchoP50US <= 0 {
			t.Errorf("ratio %+v", q)
		}
	}
	var buf bytes.Buffer
	WriteText(&buf, rep)
	for _, want := range []string{"service ops/s", "p99.9 µs", "(service−store)/echo", "goal ≤ 2"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}
	// A second run finds the file laid out already.
	phases = nil
	cfg.Ops, cfg.Systems, cfg.Clients, cfg.Depths = []string{"stat"}, []string{"service"}, []int{1}, []int{1}
	if _, err := Run(cfg); err != nil {
		t.Fatal(err)
	}
	for _, p := range phases {
		if strings.Contains(p, "laying out") {
			t.Errorf("laid out again: %q", phases)
		}
	}
}

// TestFrameSizes: the echo server is asked the protocol's frame sizes: a
// 4 KiB write's request and a 4 KiB read's response carry the data.
func TestFrameSizes(t *testing.T) {
	m, err := frameSizes(4096)
	if err != nil {
		t.Fatal(err)
	}
	if w, r, s := m["write"], m["read"], m["stat"]; w[0] < 4096 || w[1] > 64 || r[0] > 64 || r[1] < 4096 || s[0] > 64 || s[1] < 96 {
		t.Fatalf("sizes %v", m)
	}
}

// TestEcho_SyncAndPipelined: the echo floor answers with the sizes asked.
func TestEcho_SyncAndPipelined(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.sock")
	e, err := startEcho(path)
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	c, err := dialEcho(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, sz := range [][2]int{{8, 4}, {4200, 28}, {40, 4124}} {
		if err := c.call(echoRequest(sz[0], sz[1])); err != nil {
			t.Fatal(err)
		}
	}
	c.close()
	p, err := dialEcho(path)
	if err != nil {
		t.Fatal(err)
	}
	p.start()
	errs := make(chan error, 16)
	for range 16 {
		go func() {
			ch := make(chan error, 1)
			for range 50 {
				if err := p.callPipelined(echoRequest(100, 5000), ch); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	p.close()
}

func TestConfig_Validate(t *testing.T) {
	ok := Config{Memdev: true, Size: 1 << 30}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []Config{
		{Size: 1 << 30},                  // no device
		{File: "dev.img", Size: 1 << 30}, // no server process, not in process
		{Memdev: true, Size: 1 << 30, Ops: []string{"delete"}},
		{Memdev: true, Size: 1 << 30, Systems: []string{"nfs"}},
		{Memdev: true, Size: 1 << 30, Clients: []int{0}},
		{Memdev: true, Size: 1 << 30, Depths: []int{257}},
		{Memdev: true, Size: 1 << 30, BS: 2 << 20},
		{Memdev: true, Size: 1 << 30, FileSize: 100},
		{Memdev: true, Size: 64 << 20},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: valid", c)
		}
	}
}
