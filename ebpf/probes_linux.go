//go:build linux && amd64

package ebpf

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"

	"ustore/lock"
	"ustore/trace"
)

// The cookies that tell bpf/markers.bpf.c's one program which marker hit.
const (
	cookieLockBegin  = 1
	cookieLockEnds   = 2
	cookiePhaseBegin = 3
	cookiePhaseEnd   = 4
)

// Probes are the BPF programs attached to this process. Attach makes
// them; Close detaches and frees everything. The map readers may be
// called from any goroutine, also concurrently with Close (they then
// return ErrClosed).
type Probes struct {
	mu      sync.Mutex // guards closed and the objects against Close
	closed  bool
	markers *markersObjects
	uring   *uringObjects
	klock   *klockObjects
	offcpu  *offcpuObjects
	links   []link.Link

	stopWatch   func() // stops watching trace's reactor threads (FeatureOffCPU)
	undeferEnds func() // ends lock's deferral of wait ends (FeatureMarkers)

	reader *ringbuf.Reader
	done   chan struct{} // closed when the reader goroutine returned

	attached []string
	failed   map[string]error

	cfg        Config
	clock      monoClock
	spanEvents atomic.Uint64 // WaitEvents read from the ring buffer and added to a live span
	childSpans atomic.Uint64 // of which became a child span of an ended one
	unspanned  atomic.Uint64 // of which had no known span
}

// Attach loads and attaches every feature the kernel and privileges allow
// and returns the Probes when at least one is attached; Failed says why
// the others are not. With none attached it returns the joined errors.
func Attach(cfg Config) (*Probes, error) {
	if cfg.WaitThreshold <= 0 {
		cfg.WaitThreshold = DefaultWaitThreshold
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	p := &Probes{cfg: cfg, failed: map[string]error{}, clock: newMonoClock()}
	for _, f := range Features {
		if !cfg.wants(f) {
			continue
		}
		var err error
		switch f {
		case FeatureMarkers:
			err = p.attachMarkers()
		case FeatureUring:
			err = p.attachUring()
		case FeatureKernelLocks:
			err = p.attachKernelLocks()
		case FeatureOffCPU:
			err = p.attachOffCPU()
		}
		if err != nil {
			p.failed[f] = err
			continue
		}
		p.attached = append(p.attached, f)
	}
	if len(p.attached) == 0 {
		errs := make([]error, 0, len(p.failed))
		for _, f := range Features {
			errs = append(errs, p.failed[f])
		}
		if len(p.failed) == 0 {
			errs = append(errs, fmt.Errorf("ebpf: no feature selected (of %v)", Features))
		}
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// Attached returns the features attached, in Features order.
func (p *Probes) Attached() []string { return append([]string(nil), p.attached...) }

// Failed returns, for each feature not attached, why.
func (p *Probes) Failed() map[string]error {
	out := make(map[string]error, len(p.failed))
	for f, err := range p.failed {
		out[f] = err
	}
	return out
}

// Summary is one line for the log: what is attached and why anything is
// not.
func (p *Probes) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "attached: %s", strings.Join(p.attached, ", "))
	names := make([]string, 0, len(p.failed))
	for f := range p.failed {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		fmt.Fprintf(&b, "; %s off: %v", f, p.failed[f])
	}
	return b.String()
}

func (p *Probes) attachMarkers() (err error) {
	spec, err := loadMarkers()
	if err != nil {
		return err
	}
	if err := spec.Variables[markersVarWaitThresholdNs].Set(uint64(p.cfg.WaitThreshold)); err != nil {
		return fmt.Errorf("ebpf: set threshold: %w", err)
	}
	lockBegin, lockEnds := trace.MarkerPCs()
	phaseBegin, phaseEnd := trace.PhaseMarkerPCs()
	path, offs, err := fileOffsets([]uintptr{lockBegin, lockEnds, phaseBegin, phaseEnd})
	if err != nil {
		return err
	}
	objs := new(markersObjects)
	if err := spec.LoadAndAssign(objs, nil); err != nil {
		return fmt.Errorf("ebpf: load markers: %w", err)
	}
	defer func() {
		if err != nil {
			objs.Close()
		}
	}()
	ex, err := link.OpenExecutable(path)
	if err != nil {
		return fmt.Errorf("ebpf: %w", err)
	}
	l, err := ex.UprobeMulti(nil, objs.UstoreMarker, &link.UprobeMultiOptions{
		Addresses: offs,
		Cookies:   []uint64{cookieLockBegin, cookieLockEnds, cookiePhaseBegin, cookiePhaseEnd},
		PID:       uint32(os.Getpid()),
	})
	if err != nil {
		return fmt.Errorf("ebpf: uprobes on %s: %w", path, err)
	}
	rd, err := ringbuf.NewReader(objs.Events)
	if err != nil {
		l.Close()
		return fmt.Errorf("ebpf: ring buffer: %w", err)
	}
	p.markers, p.reader, p.done = objs, rd, make(chan struct{})
	p.links = append(p.links, l)
	// Wait ends reach the probe after the lock is released, so that no hit
	// lengthens a critical section (package lock, "Deferred ends").
	p.undeferEnds = lock.DeferWaitEnds()
	go p.readEvents()
	return nil
}

func (p *Probes) attachUring() (err error) {
	spec, err := loadUring()
	if err != nil {
		return err
	}
	if err := spec.Variables[uringVarTargetTgid].Set(uint32(os.Getpid())); err != nil {
		return fmt.Errorf("ebpf: set tgid: %w", err)
	}
	objs := new(uringObjects)
	if err := spec.LoadAndAssign(objs, nil); err != nil {
		return fmt.Errorf("ebpf: load io_uring programs: %w", err)
	}
	links, err := attachTracing(objs.UringSubmit, objs.UringComplete)
	if err != nil {
		objs.Close()
		return err
	}
	p.uring = objs
	p.links = append(p.links, links...)
	return nil
}

func (p *Probes) attachKernelLocks() error {
	spec, err := loadKlock()
	if err != nil {
		return err
	}
	if err := spec.Variables[klockVarTargetTgid].Set(uint32(os.Getpid())); err != nil {
		return fmt.Errorf("ebpf: set tgid: %w", err)
	}
	objs := new(klockObjects)
	if err := spec.LoadAndAssign(objs, nil); err != nil {
		return fmt.Errorf("ebpf: load lock contention programs: %w", err)
	}
	links, err := attachTracing(objs.KlockBegin, objs.KlockEnd)
	if err != nil {
		objs.Close()
		return err
	}
	p.klock = objs
	p.links = append(p.links, links...)
	return nil
}

func (p *Probes) attachOffCPU() error {
	spec, err := loadOffcpu()
	if err != nil {
		return err
	}
	objs := new(offcpuObjects)
	if err := spec.LoadAndAssign(objs, nil); err != nil {
		return fmt.Errorf("ebpf: load sched_switch program: %w", err)
	}
	// The set is copied in before the program runs and on every change:
	// a ring opened or closed later is measured from then on.
	var set offcpuReactorSet
	var setErr error
	stop := trace.WatchReactorThreads(func(tids []int) {
		set = reactorSet(set, tids)
		if err := objs.Reactors.Put(uint32(0), set); err != nil && setErr == nil {
			setErr = err
		}
	})
	if setErr != nil {
		stop()
		objs.Close()
		return fmt.Errorf("ebpf: set reactor threads: %w", setErr)
	}
	links, err := attachTracing(objs.OffcpuSwitch)
	if err != nil {
		stop()
		objs.Close()
		return err
	}
	p.offcpu, p.stopWatch = objs, stop
	p.links = append(p.links, links...)
	return nil
}

// reactorSet is the BPF side's copy of the reactor threads, made from
// the previous one and trace's list: a thread keeps its slot while it
// stays (moving it would orphan its off-CPU start, kept per slot), a
// thread gone frees its slot (0), a new one takes the first free slot.
// Past reactorsMax threads (more rings than a server has) the rest go
// unmeasured.
func reactorSet(prev offcpuReactorSet, tids []int) offcpuReactorSet {
	var _ [reactorsMax]uint32 = prev.Tids // the C's REACTORS_MAX
	next := prev
	for i, tid := range next.Tids {
		if tid != 0 && !slices.Contains(tids, int(tid)) {
			next.Tids[i] = 0
		}
	}
	for _, tid := range tids {
		if slices.Contains(next.Tids[:], uint32(tid)) {
			continue
		}
		if i := slices.Index(next.Tids[:], 0); i >= 0 {
			next.Tids[i] = uint32(tid)
		}
	}
	return next
}

// attachTracing attaches tp_btf programs, all or none.
func attachTracing(progs ...*ebpf.Program) ([]link.Link, error) {
	var links []link.Link
	for _, prog := range progs {
		l, err := link.AttachTracing(link.TracingOptions{Program: prog})
		if err != nil {
			for _, l := range links {
				l.Close()
			}
			return nil, fmt.Errorf("ebpf: attach %s: %w", prog, err)
		}
		links = append(links, l)
	}
	return links, nil
}

// Close detaches every program and frees every map; nothing is left in the
// kernel (no pinning). It waits for the ring-buffer reader to stop.
// Calls after the first return nil.
func (p *Probes) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	var errs []error
	if p.stopWatch != nil {
		p.stopWatch()
	}
	if p.undeferEnds != nil {
		p.undeferEnds() // flushes: every wait that ended reaches the probe first
	}
	for _, l := range p.links {
		errs = append(errs, l.Close())
	}
	if p.reader != nil {
		errs = append(errs, p.reader.Close())
		<-p.done
	}
	if p.markers != nil {
		errs = append(errs, p.markers.Close())
	}
	if p.uring != nil {
		errs = append(errs, p.uring.Close())
	}
	if p.klock != nil {
		errs = append(errs, p.klock.Close())
	}
	if p.offcpu != nil {
		errs = append(errs, p.offcpu.Close())
	}
	return errors.Join(errs...)
}
