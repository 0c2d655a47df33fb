package server

import (
	"context"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"ustore/client"
	"ustore/proto"
)

// TestBudget_Acquire_FIFO: a waiter is served in order, a smaller one
// behind it does not overtake it, and one that gives up lets the next in.
func TestBudget_Acquire_FIFO(t *testing.T) {
	b := newBudget(10)
	never := make(chan struct{})
	if !b.acquire(never, 8) {
		t.Fatal("a free budget refused")
	}
	got := make(chan int64, 3)
	wait := func(n int64, done chan struct{}, waiting int) {
		go func() {
			if b.acquire(done, n) {
				got <- n
			} else {
				got <- -n
			}
		}()
		for deadline := time.Now().Add(10 * time.Second); b.stats().Waiting != waiting; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("acquire(%d) did not wait", n)
			}
		}
	}
	giveUp := make(chan struct{})
	wait(6, giveUp, 1) // first in line, does not fit
	wait(2, never, 2)  // would fit, but is behind the 6
	select {
	case n := <-got:
		t.Fatalf("acquire(%d) overtook the waiter in front of it", n)
	case <-time.After(20 * time.Millisecond):
	}
	close(giveUp)
	// The 6, leaving the front, grants the 2 before its own acquire
	// returns, so the two answers reach got in either order.
	first, second := <-got, <-got
	if min(first, second) != -6 || max(first, second) != 2 {
		t.Fatalf("got %d and %d, want the 6 to give up (-6) and the 2 granted once it left", first, second)
	}
	b.release(8)
	b.release(2)
	if s := b.stats(); s.Bytes != 0 || s.HighWater != 10 || s.Waiting != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// liveHeap is the Go heap still reachable after two collections (the
// second frees what sync.Pool's victim cache kept from the first).
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// vmRSS is the process's resident set (/proc/self/status VmRSS), in bytes.
func vmRSS(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

func heapMetric(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestServer_Budget_ReadFlood is the attack of issue 14: many connections
// pipeline full-size reads and never read the responses. The server must
// stop reading once its budget of bytes in flight is spent: the bytes in
// flight never pass it, the live heap stays within the budget and a small
// allowance, and once the attackers are gone everything is given back —
// to the budget, and the memory to the kernel — and the store serves. (Without the budget, the 20 × 32 MiB of responses
// were all allocated.)
func TestServer_Budget_ReadFlood(t *testing.T) {
	const (
		budgetBytes = 16 << 20
		attackers   = 20
		perConn     = 32
		slack       = 16 << 20 // 20 connections' buffers, goroutines, the test's own
	)
	st, _ := newTestStore(t)
	ts := startServer(t, st, Options{InflightBytesMax: budgetBytes, InflightMax: perConn, WriteTimeout: time.Minute}, nil)
	ctx := context.Background()
	c := dial(t, ts.sock)
	a, err := c.Create(ctx, client.RootIno, "big", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, proto.IOSizeMax)
	for i := range data {
		data[i] = byte(i)
	}
	if _, err := c.Write(ctx, a.Ino, 0, data); err != nil {
		t.Fatal(err)
	}
	before := liveHeap()
	rssBefore := vmRSS(t)

	var conns []*rawConn
	for range attackers {
		rc, _ := handshake(t, ts.sock)
		var b []byte
		for id := uint64(1); id <= perConn; id++ {
			b = append(b, request(t, id, &proto.Read{Ino: a.Ino, Len: proto.IOSizeMax})...)
		}
		rc.write(b)
		conns = append(conns, rc)
	}
	// The server stops reading: a reader waits for the budget (or, with
	// no budget, it has read every request).
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if ts.Budget().Waiting > 0 || ts.requestsRead() >= attackers*perConn {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the attack did not saturate the server: %+v", ts.Budget())
		}
	}
	live := liveHeap()
	bs := ts.Budget()
	t.Logf("budget %+v; live heap %d MiB before, %d MiB under the attack", bs, before>>20, live>>20)
	if bs.HighWater > budgetBytes || bs.HighWater < budgetBytes-2*int64(proto.BufferLargeCap()) {
		t.Fatalf("high water %d, want within the budget %d and close to it", bs.HighWater, budgetBytes)
	}
	if live > before+budgetBytes+slack {
		t.Fatalf("live heap grew by %d MiB under the attack, more than the budget %d MiB + %d MiB",
			(live-before)>>20, budgetBytes>>20, slack>>20)
	}
	// And the process's RSS: the heap may run up to twice what is live
	// (GOGC=100) before a collection; the race detector's shadow memory
	// multiplies it again. Without the budget it grew by over 600 MiB.
	rssGrowthMax := uint64(2 * (budgetBytes + slack))
	if raceEnabled {
		rssGrowthMax *= 4
	}
	if rss := vmRSS(t); rss > rssBefore+rssGrowthMax {
		t.Fatalf("RSS grew by %d MiB under the attack, more than %d MiB", (rss-rssBefore)>>20, rssGrowthMax>>20)
	} else {
		t.Logf("RSS %d MiB before, %d MiB under the attack (bound +%d MiB)", rssBefore>>20, rss>>20, rssGrowthMax>>20)
	}

	// The attackers leave without reading: their responses are dropped
	// and the budget given back; the store serves.
	for _, rc := range conns {
		rc.nc.Close()
	}
	for deadline := time.Now().Add(20 * time.Second); ts.Budget().Bytes != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("budget not given back: %+v", ts.Budget())
		}
	}
	// The burst's memory goes back: the pools are emptied and the pages
	// returned to the kernel once the bytes in flight have stayed at zero.
	for deadline := time.Now().Add(20 * time.Second); ts.mem.released.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the burst's memory was not released")
		}
	}
	if objects := heapMetric("/memory/classes/heap/objects:bytes"); objects > before+slack/2 {
		t.Fatalf("after the release: %d MiB of heap objects, %d MiB before the attack", objects>>20, before>>20)
	}
	got := make([]byte, proto.IOSizeMax)
	if n, err := c.Read(ctx, a.Ino, 0, got); err != nil || n != len(data) || got[12345] != data[12345] {
		t.Fatalf("read after the attack: %d, %v", n, err)
	}
	if s := ts.Budget(); s.HighWater > budgetBytes {
		t.Fatalf("high water %d over the budget", s.HighWater)
	}
}

// requestsRead is the number of requests read on the open connections.
func (s *Server) requestsRead() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for c := range s.conns {
		n += int(c.requests.Load())
	}
	return n
}
