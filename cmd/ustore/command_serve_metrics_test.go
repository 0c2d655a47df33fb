package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"ustore/client"
)

// TestCommand_Serve_Metrics_Conventions runs a real `ustore serve
// --metrics-addr` under traffic that gives every family a sample — writes,
// logged and committed fsyncs, a rename's fallback, a failed lookup,
// contended tree locks — and checks its /metrics by Prometheus's
// conventions: promlint (the linter behind `promtool check metrics`)
// finds no problem, no ustore family is untyped, counters end in _total,
// and a request carries its status. The dashboard under contrib/grafana is
// checked against the same scrape.
func TestCommand_Serve_Metrics_Conventions(t *testing.T) {
	body, fams := scrapeUnderTraffic(t)

	t.Run("promlint", func(t *testing.T) {
		problems, err := promlint.New(bytes.NewReader(body)).Lint()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	})

	// The tool itself, as an operator would run it (Debian's prometheus
	// package has it; .ci/run installs it, so CI never skips this).
	t.Run("promtool", func(t *testing.T) {
		promtool, err := exec.LookPath("promtool")
		if err != nil {
			t.Skip("promtool not installed (apt-get install prometheus); the promlint subtest runs its linter")
		}
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(body)
		if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) != 0 {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	})

	t.Run("types", func(t *testing.T) {
		for name, f := range fams {
			if !strings.HasPrefix(name, "ustore_") {
				continue
			}
			switch typ := f.GetType(); {
			case typ == dto.MetricType_UNTYPED:
				t.Errorf("%s is untyped", name)
			case typ == dto.MetricType_COUNTER && !strings.HasSuffix(name, "_total"):
				t.Errorf("counter %s lacks _total", name)
			case typ != dto.MetricType_COUNTER && strings.HasSuffix(name, "_total"):
				t.Errorf("%s %s ends in _total", typ, name)
			}
		}
		for name, typ := range map[string]dto.MetricType{
			"ustore_request_duration_seconds":      dto.MetricType_HISTOGRAM,
			"ustore_fsync_duration_seconds":        dto.MetricType_HISTOGRAM,
			"ustore_log_sync_duration_seconds":     dto.MetricType_HISTOGRAM,
			"ustore_log_sync_batch_size":           dto.MetricType_HISTOGRAM,
			"ustore_commit_duration_seconds":       dto.MetricType_HISTOGRAM,
			"ustore_commit_phase_duration_seconds": dto.MetricType_HISTOGRAM,
			"ustore_lock_wait_duration_seconds":    dto.MetricType_HISTOGRAM,
			"ustore_store_fsync_committed_total":   dto.MetricType_COUNTER,
			"ustore_store_fsync_logged_total":      dto.MetricType_COUNTER,
			"ustore_store_fsync_commit_total":      dto.MetricType_COUNTER,
			"ustore_store_fsync_fallbacks_total":   dto.MetricType_COUNTER,
			"ustore_store_log_syncs_total":         dto.MetricType_COUNTER,
			"ustore_store_node_cache_hits_total":   dto.MetricType_COUNTER,
			"ustore_store_node_cache_misses_total": dto.MetricType_COUNTER,
			"ustore_store_node_cache_bytes":        dto.MetricType_GAUGE,
			"ustore_store_dirty_bytes":             dto.MetricType_GAUGE,
			"ustore_store_inodes":                  dto.MetricType_GAUGE,
			"ustore_store_free_extents":            dto.MetricType_GAUGE,
		} {
			switch f := fams[name]; {
			case f == nil:
				t.Errorf("no family %s, want a %s", name, typ)
			case f.GetType() != typ || len(f.GetMetric()) == 0:
				t.Errorf("%s: a %s of %d series, want a %s with samples", name, f.GetType(), len(f.GetMetric()), typ)
			}
		}
	})

	t.Run("status", func(t *testing.T) {
		want := map[string]bool{"lookup ENOENT": false, "lookup ok": false, "fsync ok": false}
		for _, m := range fams["ustore_request_duration_seconds"].GetMetric() {
			l := labelMap(m)
			if l["status"] == "" {
				t.Errorf("request series %v has no status", l)
			}
			if _, ok := want[l["op"]+" "+l["status"]]; ok && m.GetHistogram().GetSampleCount() > 0 {
				want[l["op"]+" "+l["status"]] = true
			}
		}
		for k, seen := range want {
			if !seen {
				t.Errorf("no request series %s", k)
			}
		}
		for _, m := range fams["ustore_store_fsync_fallbacks_total"].GetMetric() {
			if l := labelMap(m); l["reason"] != "rename" || m.GetCounter().GetValue() < 1 {
				t.Errorf("fallback series %v = %v, want reason=rename ≥ 1", l, m.GetCounter().GetValue())
			}
		}
	})

	t.Run("dashboard", func(t *testing.T) {
		checkDashboard(t, filepath.Join("..", "..", "contrib", "grafana", "ustore.json"), fams)
	})
}

// lockWaitRoundsMax bounds the rounds of concurrent creates that wait for
// a contended tree lock: each round runs lockWaitWriters writers of
// lockWaitFiles files each into one directory, and in practice the first
// round already contends.
const (
	lockWaitRoundsMax = 50
	lockWaitWriters   = 8
	lockWaitFiles     = 64
)

// scrapeUnderTraffic starts a server, gives every family of /metrics a
// sample, and returns the exposition as served and as parsed.
func scrapeUnderTraffic(t *testing.T) ([]byte, map[string]*dto.MetricFamily) {
	bin := buildUstore(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	p := startServe(t, bin, "--device", filepath.Join(dir, "d.img"), "--size", "256M", "--socket", sock,
		"--metrics-addr", "127.0.0.1:0", "--commit-interval", "5m")
	url := p.metricsURL(t)
	ctx := context.Background()
	c, err := client.Dial(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	// A logged fsync (log sync, its batch), then a failed and a served
	// lookup.
	f, err := c.Create(ctx, client.RootIno, "logged", 0o644)
	must(err)
	_, err = c.Write(ctx, f.Ino, 0, make([]byte, 8192))
	must(err)
	must(c.Fsync(ctx, f.Ino, false))
	if _, err := c.Lookup(ctx, client.RootIno, "missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("lookup of a missing name: %v", err)
	}
	_, err = c.Lookup(ctx, client.RootIno, "logged")
	must(err)
	// A rename in the transaction: the next fsync falls back to a commit
	// (commit and its phases).
	g, err := c.Create(ctx, client.RootIno, "renamed", 0o644)
	must(err)
	_, err = c.Write(ctx, g.Ino, 0, make([]byte, 4096))
	must(err)
	must(c.Rename(ctx, client.RootIno, "renamed", client.RootIno, "moved"))
	must(c.Fsync(ctx, g.Ino, false))
	must(c.Sync(ctx))

	// Contended tree locks: writers creating files at once, each in a
	// directory of its own (a directory's inode lock would serialize them
	// before the tree), all in the fs tree, round after round until a wait
	// is recorded. Each writer has a connection of its own: the server
	// makes a create on the connection's reader when it can, so the
	// creates of one connection would run one at a time.
	dirs := make([]uint64, lockWaitWriters)
	conns := make([]*client.Client, lockWaitWriters)
	for w := range dirs {
		d, err := c.Mkdir(ctx, client.RootIno, fmt.Sprintf("busy%d", w), 0o755)
		must(err)
		dirs[w] = d.Ino
		conns[w], err = client.Dial(ctx, sock)
		must(err)
		defer conns[w].Close()
	}
	for round := 0; ; round++ {
		if round == lockWaitRoundsMax {
			t.Fatalf("no contended tree lock in %d rounds of %d writers", round, lockWaitWriters)
		}
		var wg sync.WaitGroup
		errs := make(chan error, lockWaitWriters)
		for w, dir := range dirs {
			wg.Go(func() {
				for i := range lockWaitFiles {
					if _, err := conns[w].Create(ctx, dir, fmt.Sprintf("r%d-%d", round, i), 0o644); err != nil {
						errs <- err
						return
					}
					if _, err := conns[w].Lookup(ctx, dirs[(w+1)%len(dirs)], fmt.Sprintf("r%d-%d", round, i)); err != nil && !errors.Is(err, fs.ErrNotExist) {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		must(<-errs)
		if _, ok := scrapeFamilies(t, url)["ustore_lock_wait_duration_seconds"]; ok {
			t.Logf("a contended tree lock in round %d", round)
			break
		}
	}
	must(c.Sync(ctx))

	body := scrapeBody(t, url)
	fams := parseExposition(t, body)
	p.stop(t)
	return body, fams
}

func scrapeBody(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", url, resp.Status, err)
	}
	return body
}

func scrapeFamilies(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	return parseExposition(t, scrapeBody(t, url))
}

func parseExposition(t *testing.T, body []byte) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

func labelMap(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}
