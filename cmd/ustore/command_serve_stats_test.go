package main

import (
	"context"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"ustore/client"
	"ustore/store"
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

// TestFlattenStats: every numeric field of store.Stats is served, and
// nested structs, arrays and maps (a fallback count by reason) flatten
// under their field's name.
func TestFlattenStats(t *testing.T) {
	m := flattenStats(store.Stats{FsyncCommitted: 3, FsyncCommit: 4, DirtyBytes: -1})
	if m["fsync_committed"] != 3 || m["fsync_commit"] != 4 || m["dirty_bytes"] != -1 {
		t.Fatalf("store stats %v", m)
	}
	type inner struct{ LeafSplits uint64 }
	got := flattenStats(struct {
		FsyncFallback map[string]uint64
		Log           inner
		Batch         [2]int
		Ready         bool
	}{FsyncFallback: map[string]uint64{"RenamedDir": 2}, Log: inner{5}, Batch: [2]int{6, 7}, Ready: true})
	want := map[string]float64{"fsync_fallback_renamed_dir": 2, "log_leaf_splits": 5, "batch_0": 6, "batch_1": 7, "ready": 1}
	if !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// TestCommand_Serve_StoreStatsServed: with --metrics-addr, serve publishes
// the store's counters; an fsync that had to commit shows in
// ustore_store_fsync_commit. The ablation flag is accepted and said aloud.
func TestCommand_Serve_StoreStatsServed(t *testing.T) {
	bin := buildUstore(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	p := startServe(t, bin, "--device", filepath.Join(dir, "d.img"), "--size", "128M", "--socket", sock,
		"--metrics-addr", "127.0.0.1:0", "--commit-interval", "5m", "--ablate-committed-lock")
	p.waitLog(t, "ablation: the committed check takes the journal's state lock")
	url := p.metricsURL(t)
	before := traceScrape(t, url)
	if _, ok := before[statsPrefix+"fsync_commit"]; !ok {
		t.Fatalf("no %sfsync_commit on /metrics", statsPrefix)
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
	k := statsPrefix + "fsync_commit"
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
