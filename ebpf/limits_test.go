//go:build 386 || amd64

package ebpf

import (
	"testing"

	"github.com/cilium/ebpf"
)

// TestLimits_MatchObjects: the committed objects' map sizes are the ones
// limits.go documents (the C and the Go must not drift apart). It reads
// the ELF only: no privileges needed.
func TestLimits_MatchObjects(t *testing.T) {
	for _, c := range []struct {
		load func() (*ebpf.CollectionSpec, error)
		max  map[string]uint32
	}{
		{loadMarkers, map[string]uint32{"wait_starts": waitStartsMax, "lock_hist": lockHistMax,
			"phase_starts": phaseStartsMax, "phase_hist": phaseHistMax, "events": eventsBytes}},
		{loadUring, map[string]uint32{"uring_starts": uringStartsMax, "uring_hist": uringHistMax}},
		{loadKlock, map[string]uint32{"klock_starts": klockStartsMax, "klock_hist": klockHistMax}},
		{loadOffcpu, map[string]uint32{"offcpu_starts": reactorsMax, "offcpu_hist": offcpuHistMax}},
	} {
		spec, err := c.load()
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range c.max {
			m, ok := spec.Maps[name]
			if !ok {
				t.Fatalf("no map %s in the object", name)
			}
			if m.MaxEntries != want {
				t.Errorf("map %s: max_entries %d in the object, %d in limits.go", name, m.MaxEntries, want)
			}
		}
	}
}
