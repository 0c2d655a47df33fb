//go:build linux && amd64

package ebpf

import (
	"fmt"

	"github.com/cilium/ebpf"
)

// LockWaits returns the lock-wait histograms by lock kind (write bit
// included: lock/kind.go); empty when FeatureMarkers is off.
func (p *Probes) LockWaits() (map[uint32]Hist, error) {
	if p.markers == nil {
		return p.read(nil)
	}
	return p.read(p.markers.LockHist)
}

// Phases returns the commit and log-sync phase histograms by phase
// (trace.Phase*); empty when FeatureMarkers is off.
func (p *Probes) Phases() (map[uint32]Hist, error) {
	if p.markers == nil {
		return p.read(nil)
	}
	return p.read(p.markers.PhaseHist)
}

// UringOps returns the io_uring submit-to-complete histograms by opcode
// (IORING_OP_*); empty when FeatureUring is off.
func (p *Probes) UringOps() (map[uint32]Hist, error) {
	if p.uring == nil {
		return p.read(nil)
	}
	return p.read(p.uring.UringHist)
}

// KernelLocks returns the kernel lock contention histograms by contention
// flags (LCB_F_*); empty when FeatureKernelLocks is off.
func (p *Probes) KernelLocks() (map[uint32]Hist, error) {
	if p.klock == nil {
		return p.read(nil)
	}
	return p.read(p.klock.KlockHist)
}

// ReactorOffCPU returns the off-CPU histograms of the io_uring reactor
// threads by reason (OffCPUWait, OffCPUPreempted); empty when
// FeatureOffCPU is off.
func (p *Probes) ReactorOffCPU() (map[uint32]Hist, error) {
	if p.offcpu == nil {
		return p.read(nil)
	}
	return p.read(p.offcpu.OffcpuHist)
}

// InflightWaits is the number of lock waits begun and not yet ended, as
// BPF tracks them: 0 whenever no lock is being waited for.
func (p *Probes) InflightWaits() (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, ErrClosed
	}
	if p.markers == nil {
		return 0, nil
	}
	var k markersWaitKey
	var v markersWaitStart
	n := 0
	it := p.markers.WaitStarts.Iterate()
	for it.Next(&k, &v) {
		n++
	}
	return n, it.Err()
}

// Stats reads the counters.
func (p *Probes) Stats() (Stats, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return Stats{}, ErrClosed
	}
	s := Stats{
		Events:            p.spanEvents.Load() + p.childSpans.Load() + p.unspanned.Load(),
		SpanEvents:        p.spanEvents.Load(),
		ChildSpans:        p.childSpans.Load(),
		EventsWithoutSpan: p.unspanned.Load(),
	}
	if p.markers == nil {
		return s, nil
	}
	var vals [5]uint64
	for i := range vals {
		if err := p.markers.Stats.Lookup(uint32(i), &vals[i]); err != nil {
			return s, fmt.Errorf("ebpf: read stats: %w", err)
		}
	}
	s.EventsLost, s.WaitsUntracked, s.LockEndOrphans, s.PhaseEndOrphans = vals[0], vals[1], vals[2], vals[3]
	s.EndsTruncated = vals[4]
	return s, nil
}

// read sums a histogram map (bpf/hist.h) into one Hist per class; nil m
// (its feature is off) gives none. The map is read only while p is open.
func (p *Probes) read(m *ebpf.Map) (map[uint32]Hist, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	out := map[uint32]Hist{}
	if m == nil {
		return out, nil
	}
	var k markersHistKey
	var v uint64
	it := m.Iterate()
	for it.Next(&k, &v) {
		h := out[k.Class]
		h.add(k.Slot, v)
		out[k.Class] = h
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("ebpf: read %s: %w", m, err)
	}
	return out, nil
}
