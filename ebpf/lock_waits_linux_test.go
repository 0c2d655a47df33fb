//go:build linux && amd64

package ebpf

import (
	"sync"
	"sync/atomic"
	"testing"

	"ustore/lock"
)

// TestProbes_LockWaits_ExactCounts: n forced contended acquisitions (half
// Lock, half RLock against a held writer) give a BPF histogram total of
// exactly n for the class's kind, split by mode, equal to the Go-side
// Class count; the in-flight map is empty afterwards.
func TestProbes_LockWaits_ExactCounts(t *testing.T) {
	const n = 200
	p := attachAll(t, Config{})
	kind := lock.NodeKind(0x1234, 1) // a tree id no engine uses
	class := lock.NewClass("ebpftest.level1", kind)
	var m lock.RWMutex
	m.Init(class, 4096)

	writes := 0            // written under m
	var reads atomic.Int64 // bumped under m's read lock
	for i := range n {
		m.Lock()
		var wg sync.WaitGroup
		if i%2 == 0 {
			wg.Go(func() { m.Lock(); writes++; m.Unlock() })
		} else {
			wg.Go(func() { m.RLock(); reads.Add(1); m.RUnlock() })
		}
		// The begin marker has run once BPF holds the wait: the waiter
		// is on the slow path whatever happens next.
		waitFor(t, "the waiter's begin marker", func() bool {
			k, err := p.InflightWaits()
			return err == nil && k == 1
		})
		m.Unlock()
		wg.Wait()
		// The waiter's end was deferred (package lock, while the markers
		// are attached) until after it released m; flushing hands it to
		// BPF, which then holds no wait.
		lock.FlushWaitEnds()
		if k, err := p.InflightWaits(); err != nil || k != 0 {
			t.Fatalf("wait %d: %d waits in flight after the flush (%v), want 0", i, k, err)
		}
	}

	if writes != n/2 || reads.Load() != n/2 {
		t.Fatalf("%d writers and %d readers got the lock, want %d each", writes, reads.Load(), n/2)
	}
	hs, err := p.LockWaits()
	if err != nil {
		t.Fatal(err)
	}
	write, read := hs[kind|lock.KindWrite].Count(), hs[kind].Count()
	if write != n/2 || read != n/2 {
		t.Fatalf("BPF counted %d write and %d read waits, want %d each", write, read, n/2)
	}
	if got := class.Snapshot().Contended; got != write+read {
		t.Fatalf("Go-side class counted %d, BPF %d", got, write+read)
	}
	if hs[kind].Sum == 0 || hs[kind|lock.KindWrite].Sum == 0 {
		t.Fatalf("BPF wait sums are zero: %+v", hs[kind])
	}
	if k, err := p.InflightWaits(); err != nil || k != 0 {
		t.Fatalf("in-flight waits after the run: %d (%v), want 0", k, err)
	}
	if s, err := p.Stats(); err != nil || s.LockEndOrphans != 0 || s.WaitsUntracked != 0 || s.EndsTruncated != 0 {
		t.Fatalf("stats %+v (%v): want no orphans, nothing untracked", s, err)
	}
}
