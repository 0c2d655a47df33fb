//go:build linux && amd64

package ebpf

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"ustore/ring"
	"ustore/trace"
)

// TestProbes_OffCPU_CountsReactorSwitches: BPF counts exactly the context
// switches the kernel counts for the reactor thread (nvcsw + nivcsw, from
// /proc), over a run of ring operations during which another thread of
// the process, not a reactor, switches thousands of times; the off-CPU
// time it sums is bounded by the run's wall time.
func TestProbes_OffCPU_CountsReactorSwitches(t *testing.T) {
	p := attachAll(t, Config{})
	r, err := ring.New(ring.Config{Entries: 32, NoDirect: true})
	if err != nil {
		t.Skipf("io_uring unavailable: %v", err)
	}
	defer r.Close()
	tids := trace.ReactorThreads()
	if len(tids) == 0 {
		t.Fatal("ring.New registered no reactor thread")
	}
	tid := tids[len(tids)-1]

	// The thread asleep first, then BPF's count: in this order the two
	// counts cover the same switches (see quiescentSwitches).
	k0 := quiescentSwitches(t, tid)
	b0 := offCPUCounts(t, p)
	start := time.Now()
	other := make(chan int)
	go func() { // a non-reactor thread that switches out 2,000 times
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for range 2000 {
			unix.Nanosleep(&unix.Timespec{Nsec: 1000}, nil)
		}
		other <- unix.Gettid()
	}()
	for range 500 {
		if err := r.Do(&ring.Op{Kind: ring.OpNop}); err != nil {
			t.Fatal(err)
		}
	}
	<-other
	k1 := quiescentSwitches(t, tid)
	b1 := offCPUCounts(t, p)
	elapsed := time.Since(start)

	var got uint64
	var sum time.Duration
	for reason, h := range b1 {
		n := h.Count() - b0[reason].Count()
		got += n
		sum += time.Duration(h.Sum - b0[reason].Sum)
		t.Logf("%s: %d switches, %v off CPU", OffCPUReason(reason), n, time.Duration(h.Sum-b0[reason].Sum))
	}
	if want := k1 - k0; got != want {
		t.Errorf("BPF counted %d switches of the reactor thread, the kernel %d", got, want)
	}
	if got == 0 {
		t.Error("500 operations made the reactor switch out no time at all")
	}
	if sum > elapsed {
		t.Errorf("off-CPU time %v exceeds the run's %v", sum, elapsed)
	}
}

// TestProbes_OffCPU_FollowsRings: a ring opened after Attach is measured,
// and a closed ring's thread leaves the set.
func TestProbes_OffCPU_FollowsRings(t *testing.T) {
	p := attachAll(t, Config{})
	before := len(trace.ReactorThreads())
	r, err := ring.New(ring.Config{Entries: 8, NoDirect: true})
	if err != nil {
		t.Skipf("io_uring unavailable: %v", err)
	}
	quiescentSwitches(t, trace.ReactorThreads()[before])
	b0 := offCPUCounts(t, p)
	for range 50 {
		if err := r.Do(&ring.Op{Kind: ring.OpNop}); err != nil {
			t.Fatal(err)
		}
	}
	tids := trace.ReactorThreads()
	quiescentSwitches(t, tids[len(tids)-1])
	var n uint64
	for reason, h := range offCPUCounts(t, p) {
		n += h.Count() - b0[reason].Count()
	}
	if n == 0 {
		t.Error("a ring opened after Attach: its reactor's switches are not counted")
	}
	r.Close()
	if got := len(trace.ReactorThreads()); got != before {
		t.Errorf("%d reactor threads after Close, %d before New", got, before)
	}
}

func offCPUCounts(t *testing.T, p *Probes) map[uint32]Hist {
	t.Helper()
	hs, err := p.ReactorOffCPU()
	if err != nil {
		t.Fatal(err)
	}
	return hs
}

// quiescentSwitches waits until thread tid sleeps and stays asleep (its
// state S and its switch count unchanged across 5 ms: an idle reactor
// sleeps in io_uring_enter until work arrives), then returns the kernel's
// count of its context switches. While it sleeps, BPF has seen every
// switch back in that the kernel counts, the last one out excepted in
// both counts alike.
func quiescentSwitches(t *testing.T, tid int) uint64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s1, n1 := threadSwitches(t, tid)
		time.Sleep(5 * time.Millisecond)
		s2, n2 := threadSwitches(t, tid)
		if s1 == "S" && s2 == "S" && n1 == n2 {
			return n2
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %d never settled asleep (state %s, %d switches)", tid, s2, n2)
		}
	}
}

// threadSwitches reads a thread's state and nvcsw + nivcsw.
func threadSwitches(t *testing.T, tid int) (state string, n uint64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/status", tid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "State:":
			state = f[1]
		case "voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:":
			var v uint64
			fmt.Sscan(f[1], &v)
			n += v
		}
	}
	return state, n
}

// TestReactorSet_KeepsSlots: a thread keeps its slot while others come and
// go; a freed slot is reused; threads past the slots are left out.
func TestReactorSet_KeepsSlots(t *testing.T) {
	var s offcpuReactorSet
	s = reactorSet(s, []int{10, 11, 12})
	s = reactorSet(s, []int{11, 12}) // 10 gone: 11 and 12 stay put
	if s.Tids[0] != 0 || s.Tids[1] != 11 || s.Tids[2] != 12 {
		t.Fatalf("after 10 left: %v", s.Tids)
	}
	s = reactorSet(s, []int{11, 12, 13})
	if s.Tids[0] != 13 || s.Tids[1] != 11 || s.Tids[2] != 12 {
		t.Fatalf("13 should take the freed slot 0: %v", s.Tids)
	}
	many := []int{11, 12, 13}
	for tid := 100; tid < 120; tid++ {
		many = append(many, tid)
	}
	s = reactorSet(s, many)
	if s.Tids[1] != 11 || s.Tids[2] != 12 || s.Tids[0] != 13 || s.Tids[reactorsMax-1] != 104 {
		t.Fatalf("past the slots: %v", s.Tids)
	}
}
