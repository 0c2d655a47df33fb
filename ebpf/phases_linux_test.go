//go:build linux && amd64

package ebpf

import (
	"context"
	"fmt"
	"testing"
	"time"

	"ustore/dev/memdev"
	"ustore/store"
	"ustore/trace"
)

// TestProbes_Phases_KCommits: k commits (Sync) and some log syncs (fsync)
// of a real store give exactly k new samples in each commit phase's BPF
// histogram, and as many log_sync samples as the engine counted log
// syncs.
func TestProbes_Phases_KCommits(t *testing.T) {
	const k = 12
	d := memdev.New(64 << 20)
	if err := store.Mkfs(d, store.MkfsOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(d, store.Options{CommitInterval: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	p := attachAll(t, Config{})
	before, err := p.Phases()
	if err != nil {
		t.Fatal(err)
	}
	stats0 := s.Engine().Stats()

	ctx := context.Background()
	for i := range k {
		if _, err := s.Put(ctx, fmt.Sprintf("/f%d", i), []byte("data"), true); err != nil {
			t.Fatal(err)
		}
		if err := s.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}

	after, err := p.Phases()
	if err != nil {
		t.Fatal(err)
	}
	stats1 := s.Engine().Stats()
	commits := stats1.Commits - stats0.Commits
	logSyncs := stats1.LogSyncs - stats0.LogSyncs
	if commits != k {
		t.Fatalf("engine counted %d commits, want %d", commits, k)
	}
	for _, ph := range []uint32{trace.PhaseCommit, trace.PhaseUpdateRoots, trace.PhaseWriteNodes, trace.PhaseFlush, trace.PhaseSuper} {
		if got := after[ph].Count() - before[ph].Count(); got != k {
			t.Errorf("phase %s: %d BPF samples, want %d", trace.PhaseName(ph), got, k)
		}
	}
	if got := after[trace.PhaseLogSync].Count() - before[trace.PhaseLogSync].Count(); got != logSyncs || logSyncs == 0 {
		t.Errorf("log_sync: %d BPF samples, engine counted %d log syncs (want equal, > 0)", got, logSyncs)
	}
	if st, err := p.Stats(); err != nil || st.PhaseEndOrphans != 0 {
		t.Fatalf("stats %+v (%v): want no phase end without a begin", st, err)
	}
}
