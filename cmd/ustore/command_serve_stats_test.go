package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ustore/client"
	"ustore/evict"
	"ustore/store"
	"ustore/trace"
)

func TestSnakeCase(t *testing.T) {
	for in, want := range map[string]string{
		"FsyncCommitted": "fsync_committed", "CsumErrors": "csum_errors", "IOErrors": "io_errors",
		"LogSyncs": "log_syncs", "Inodes": "inodes", "rename_dir": "rename_dir", "P99": "p99",
		"ContextsPerLogSync": "contexts_per_log_sync",
	} {
		if got := snakeCase(in); got != want {
			t.Errorf("snakeCase(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFlattenStats: every numeric field of store.Stats is served, a
// counter unless tagged a gauge; nested structs and arrays flatten under
// their field's name, a map (fallbacks by reason) into one labelled
// family.
func TestFlattenStats(t *testing.T) {
	got := statsByName(flattenStats(store.Stats{FsyncCommitted: 3, FsyncCommit: 4, DirtyBytes: -1,
		NodeCache: evict.Stats{Hits: 5, Bytes: 6}}))
	for name, want := range map[string]trace.Stat{
		"fsync_committed":  {Kind: trace.StatCounter, Value: 3},
		"fsync_commit":     {Kind: trace.StatCounter, Value: 4},
		"dirty_bytes":      {Kind: trace.StatGauge, Value: -1},
		"inodes":           {Kind: trace.StatGauge},
		"node_cache_hits":  {Kind: trace.StatCounter, Value: 5},
		"node_cache_bytes": {Kind: trace.StatGauge, Value: 6},
		"log_tree_cows":    {Kind: trace.StatCounter},
	} {
		if g, ok := got[name]; !ok || g.Kind != want.Kind || g.Value != want.Value {
			t.Errorf("%s: got %+v (present %v), want kind %d value %v", name, g, ok, want.Kind, want.Value)
		}
	}
	if h := got["fsync_committed"].Help; h != "store.Stats.FsyncCommitted (a counter)." {
		t.Errorf("help %q", h)
	}

	type inner struct{ LeafSplits uint64 }
	stats := flattenStats(struct {
		FsyncFallbacks map[string]uint64 `metric:"label=reason"`
		Log            inner
		Batch          [2]int `metric:"gauge"`
		Ready          bool
	}{FsyncFallbacks: map[string]uint64{"RenamedDir": 2}, Log: inner{5}, Batch: [2]int{6, 7}, Ready: true})
	want := []trace.Stat{
		{Name: "fsync_fallbacks", Kind: trace.StatCounter, Label: "reason", LabelValue: "renamed_dir", Value: 2},
		{Name: "log_leaf_splits", Kind: trace.StatCounter, Value: 5},
		{Name: "batch_0", Kind: trace.StatGauge, Value: 6},
		{Name: "batch_1", Kind: trace.StatGauge, Value: 7},
		{Name: "ready", Kind: trace.StatGauge, Value: 1},
	}
	for i := range stats {
		stats[i].Help = ""
	}
	if !slices.Equal(stats, want) {
		t.Fatalf("got %+v, want %+v", stats, want)
	}
}

func statsByName(stats []trace.Stat) map[string]trace.Stat {
	m := map[string]trace.Stat{}
	for _, s := range stats {
		m[s.Name] = s
	}
	return m
}

// TestCommand_Serve_StoreStatsServed: with --metrics-addr, serve publishes
// the store's counters; an fsync that had to commit shows in
// ustore_store_fsync_commit_total. The ablation flag is accepted and said aloud.
func TestCommand_Serve_StoreStatsServed(t *testing.T) {
	bin := buildUstore(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	p := startServe(t, bin, "--device", filepath.Join(dir, "d.img"), "--size", "128M", "--socket", sock,
		"--metrics-addr", "127.0.0.1:0", "--commit-interval", "5m", "--ablate-committed-lock")
	p.waitLog(t, "ablation: the committed check takes the journal's state lock")
	url := p.metricsURL(t)
	before := traceScrape(t, url)
	if _, ok := before[statsPrefix+"fsync_commit_total"]; !ok {
		t.Fatalf("no %sfsync_commit_total on /metrics", statsPrefix)
	}
	ctx := context.Background()
	c, err := client.Dial(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, err := c.Create(ctx, client.RootIno, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(ctx, f.Ino, 0, make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	if err := c.Fsync(ctx, f.Ino, false); err != nil {
		t.Fatal(err)
	}
	after := traceScrape(t, url)
	k := statsPrefix + "fsync_commit_total"
	if after[k]-before[k] < 1 {
		// With log trees an fsync may be logged instead: some outcome
		// counter moved.
		moved := false
		for s, v := range after {
			if strings.HasPrefix(s, statsPrefix+"fsync_") && v > before[s] {
				moved = true
			}
		}
		if !moved {
			t.Fatalf("no fsync outcome counted: before %v after %v", before, after)
		}
	}
	p.stop(t)
}
