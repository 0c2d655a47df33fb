//go:build linux && amd64

package ebpf

import (
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"ustore/lock"
	"ustore/trace"
)

// TestCollector_Gather_LockWaitHistogram: the collector publishes the BPF
// lock-wait histogram as ustore_ebpf_lock_wait_seconds with the class's
// name, the Go-side boundaries (trace.DurationBounds) and the exact count.
func TestCollector_Gather_LockWaitHistogram(t *testing.T) {
	const n = 20
	p := attachAll(t, Config{})
	class := lock.NewClass("collectortest.level0", lock.NodeKind(0x1235, 0))
	var m lock.Mutex
	m.Init(class, 8192)
	got := 0 // written under m
	for range n {
		m.Lock()
		var wg sync.WaitGroup
		wg.Go(func() { m.Lock(); got++; m.Unlock() })
		waitFor(t, "the waiter's begin marker", func() bool {
			k, err := p.InflightWaits()
			return err == nil && k == 1
		})
		m.Unlock()
		wg.Wait()
		lock.FlushWaitEnds() // the waiter's end, deferred while markers are attached
	}
	if got != n {
		t.Fatalf("%d waiters got the lock, want %d", got, n)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(NewCollector(p)); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		if mf.GetName() != "ustore_ebpf_lock_wait_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["class"] != "collectortest.level0" {
				continue
			}
			found = true
			h := m.GetHistogram()
			if labels["mode"] != "write" || h.GetSampleCount() != n || h.GetSampleSum() <= 0 {
				t.Fatalf("labels %v, count %d, sum %v; want mode write, count %d", labels, h.GetSampleCount(), h.GetSampleSum(), n)
			}
			bounds := trace.DurationBounds()
			if len(h.GetBucket()) != len(bounds) {
				t.Fatalf("%d buckets, want %d", len(h.GetBucket()), len(bounds))
			}
			for i, b := range h.GetBucket() {
				if b.GetUpperBound() != bounds[i] {
					t.Fatalf("bucket %d bound %v, want %v", i, b.GetUpperBound(), bounds[i])
				}
			}
			if last := h.GetBucket()[len(bounds)-1].GetCumulativeCount(); last != n {
				t.Fatalf("last bucket holds %d, want all %d waits", last, n)
			}
		}
	}
	if !found {
		t.Fatal("no ustore_ebpf_lock_wait_seconds series for the class")
	}
}
