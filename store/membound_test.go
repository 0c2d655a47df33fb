package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"ustore/dev"
	"ustore/dev/sysdev"
)

// The memory bound: a writer that pushes far more data than the dirty
// budget through a store must be held back (reserve waits for writeback),
// so that the process's memory stays at the budget plus a fixed amount,
// whatever the volume written.
//
// How it is measured. The writer runs in a child process — this test
// binary re-executed with memChildEnv set — so that what is measured is
// this workload alone: the parent's resident set carries whatever the
// other tests of the package allocated (the runtime returns freed memory
// to the OS lazily, and VmHWM never goes down). The device is a file in
// t.TempDir() opened with O_DIRECT (dev/sysdev), so device bytes live in
// the page cache or on disk, never in the process; the node cache is
// capped at memCache.
//
// Three figures, each with its own bound:
//
//   - Stats().DirtyBytes, sampled every millisecond while writing: at most
//     the budget plus one write chunk (writeChunk, 1 MiB, and the two
//     extra pages a chunk reserves). reserve lets a chunk past the budget
//     only when nothing is buffered, so this is the contract exactly.
//
//   - The Go heap: the largest live heap any GC saw (/gc/heap/live:bytes,
//     sampled as above, plus a forced GC at the end of each 64 MiB). Live
//     data is the dirty pages (memBudget); writeback's staging buffers,
//     wbChunkBytes (8 MiB) each, at most wbStagingMax (one batch being
//     written, wbPrepareAhead queued behind it, one being prepared; the
//     store's set holds fewer for a budget this small); the node cache
//     (memCache, 16 MiB; dirty nodes may exceed it until their commit, a
//     few hundred KiB here); and small change (the writer's 1 MiB buffer,
//     checksums, extent lists, the runtime's own): memHeapSlack, 8 MiB.
//     Without backpressure the live heap holds all 512 MiB.
//
//   - Resident memory, VmHWM (the kernel's peak) reported by the child and
//     VmRSS sampled by the parent: the heap bound twice over (GOGC=100 lets
//     the heap grow to twice the live heap before a collection, and the
//     page pool keeps freed pages until the GC after next),
//     plus memRSSFixed, 32 MiB, for what is not heap: the binary, goroutine
//     stacks, the runtime's metadata and per-P caches (15 MiB before the
//     store opens here). With the values above: 144 MiB, the budget plus a
//     margin of 136 MiB. Under -race the race runtime adds shadow memory
//     for the heap it touches and its own tables (the Go documentation
//     says 5-10x memory; measured here, 2.8x the resident set of the same
//     run without -race), so there the bound is three times that: 432 MiB.
//
// Measured on a 2-core machine (go1.26, linux/amd64): dirty bytes at most
// 7 MiB; live heap 26 MiB; VmHWM 50 MiB without -race, 160-180 MiB with it.
// The same run with a budget of 1 GiB — no backpressure within 512 MiB —
// peaks at 1015 MiB without -race and 2837 MiB with it: both bounds fail
// a store that buffers what it is given, by a factor of six or more.
const (
	memChildEnv   = "USTORE_MEMBOUND_CHILD"
	memBudget     = 8 << 20
	memCache      = 16 << 20
	memTotal      = 512 << 20
	memWrite      = 1 << 20
	memHeapSlack  = 8 << 20
	memRSSFixed   = 32 << 20
	memDeviceSize = memTotal + 256<<20

	memHeapBound    = memBudget + memCache + wbStagingMax*wbChunkBytes + memHeapSlack
	memRSSBound     = 2*memHeapBound + memRSSFixed
	memRSSBoundRace = 3 * memRSSBound
)

// memResult is what the child reports.
type memResult struct {
	Written      int64
	Seconds      float64
	MaxDirty     int64
	MaxLiveHeap  uint64
	MaxHeapObjs  uint64
	BaseRSS      uint64 // VmRSS before the store was opened
	VmHWM        uint64
	WritebackBlk uint64
}

func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// procStatus returns a field of /proc/<pid>/status in bytes.
func procStatus(pid, field string) (uint64, error) {
	f, err := os.Open(filepath.Join("/proc", pid, "status"))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/%s/status: no %s", pid, field)
}

func TestMem_Bound(t *testing.T) {
	if out := os.Getenv(memChildEnv); out != "" {
		memChild(t, out)
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc: Linux only")
	}
	resFile := filepath.Join(t.TempDir(), "result.json")
	var r memResult
	maxRSS := runMemChild(t, "TestMem_Bound", []string{memChildEnv + "=" + resFile}, resFile, &r)
	race := raceEnabled()
	limit := uint64(memRSSBound)
	if race {
		limit = memRSSBoundRace
	}
	const mib = 1 << 20
	t.Logf("race %v: wrote %d MiB in %.1fs (%d blocks written back); dirty max %.2f MiB (budget %d MiB); "+
		"live heap max %.1f MiB (bound %d MiB), heap objects max %.1f MiB; RSS before open %.1f MiB, VmHWM %.1f MiB, sampled VmRSS max %.1f MiB (bound %d MiB)",
		race, r.Written/mib, r.Seconds, r.WritebackBlk, float64(r.MaxDirty)/mib, memBudget/mib,
		float64(r.MaxLiveHeap)/mib, memHeapBound/mib, float64(r.MaxHeapObjs)/mib, float64(r.BaseRSS)/mib,
		float64(r.VmHWM)/mib, float64(maxRSS)/mib, limit/mib)

	if r.Written != memTotal {
		t.Fatalf("child wrote %d bytes, want %d", r.Written, memTotal)
	}
	if r.WritebackBlk < memTotal/blockSize {
		t.Fatalf("only %d blocks written back of %d", r.WritebackBlk, memTotal/blockSize)
	}
	if limit := int64(memBudget + memWrite + 2*blockSize); r.MaxDirty > limit {
		t.Errorf("dirty bytes reached %d, budget %d + one write chunk = %d", r.MaxDirty, memBudget, limit)
	}
	if r.MaxLiveHeap > memHeapBound {
		t.Errorf("live heap reached %.1f MiB, bound %d MiB", float64(r.MaxLiveHeap)/mib, memHeapBound/mib)
	}
	if r.VmHWM > limit {
		t.Errorf("peak RSS (VmHWM) %.1f MiB, bound %d MiB", float64(r.VmHWM)/mib, limit/mib)
	}
	if maxRSS > limit {
		t.Errorf("sampled RSS %.1f MiB, bound %d MiB", float64(maxRSS)/mib, limit/mib)
	}
}

// runMemChild runs test in a child process — this binary re-executed
// with env added — samples the child's VmRSS from outside every 5 ms
// while it runs, and decodes the result the child wrote to resFile into
// r. It returns the largest VmRSS sampled.
func runMemChild(t *testing.T, test string, env []string, resFile string, r any) uint64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var maxRSS uint64
	pid := strconv.Itoa(cmd.Process.Pid)
	stopSampling := sampleEvery(5*time.Millisecond, func() {
		if rss, err := procStatus(pid, "VmRSS"); err == nil {
			maxRSS = max(maxRSS, rss)
		}
	})
	err := cmd.Wait()
	stopSampling()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out.String())
	}
	b, err := os.ReadFile(resFile)
	if err != nil {
		t.Fatalf("child wrote no result: %v\n%s", err, out.String())
	}
	if err := json.Unmarshal(b, r); err != nil {
		t.Fatal(err)
	}
	return maxRSS
}

// openMemChild opens d in a memory test's child as `ustore serve` would
// run it with those budgets: the cache and dirty budgets of
// TestMem_InodesAndData and the Go runtime's soft limit at
// Store.MemoryLimit. It returns the store and the VmRSS before it opened.
func openMemChild(t *testing.T, d dev.Device) (*Store, uint64) {
	t.Helper()
	runtime.GC()
	base, _ := procStatus("self", "VmRSS")
	s, err := Open(d, Options{CacheBytes: memInodesCache, DirtyBytes: memInodesDirty, Logger: testLogger})
	if err != nil {
		t.Fatal(err)
	}
	debug.SetMemoryLimit(s.MemoryLimit())
	return s, base
}

// writeMemResult writes a memory test child's result r to out, for
// runMemChild in the parent.
func writeMemResult(t *testing.T, out string, r any) {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// sampleEvery calls sample every interval on a goroutine of its own until
// the returned stop, which returns once the goroutine has.
func sampleEvery(interval time.Duration, sample func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				sample()
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// memChild is the writer: it writes memTotal bytes in memWrite chunks to
// one file of a store on a file-backed device and reports what it saw to
// the file out.
func memChild(t *testing.T, out string) {
	path := filepath.Join(t.TempDir(), "dev")
	d, err := sysdev.Open(path, sysdev.Options{Size: memDeviceSize, Direct: true, Workers: 8, Logger: testLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := Mkfs(d, MkfsOptions{NodeSize: 4096}); err != nil {
		t.Fatal(err)
	}
	var r memResult
	runtime.GC()
	r.BaseRSS, _ = procStatus("self", "VmRSS")
	s, err := Open(d, Options{DirtyBytes: memBudget, CacheBytes: memCache, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Create(RootIno, "big", 0o644)
	if err != nil {
		t.Fatal(err)
	}

	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	var mu sync.Mutex
	sample := func() {
		mu.Lock()
		defer mu.Unlock()
		r.MaxDirty = max(r.MaxDirty, s.Stats().DirtyBytes)
		metrics.Read(samples)
		r.MaxLiveHeap = max(r.MaxLiveHeap, samples[0].Value.Uint64())
		r.MaxHeapObjs = max(r.MaxHeapObjs, samples[1].Value.Uint64())
	}
	stopSampling := sampleEvery(time.Millisecond, sample)

	start := time.Now()
	buf := make([]byte, memWrite)
	for off := int64(0); off < memTotal; off += memWrite {
		for i := 0; i < len(buf); i += 512 {
			buf[i] = byte(off>>20) + byte(i>>9)
		}
		n, err := s.Write(a.Ino, uint64(off), buf)
		if err != nil || n != len(buf) {
			t.Fatalf("write at %d: %d %v", off, n, err)
		}
		r.Written += int64(n)
		sample()
		if (off+memWrite)%(64<<20) == 0 {
			// A GC here makes the live heap figure current.
			runtime.GC()
			sample()
		}
	}
	stopSampling()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.Seconds = time.Since(start).Seconds()
	r.WritebackBlk = s.Stats().WritebackBlocks
	r.VmHWM, _ = procStatus("self", "VmHWM")

	// Spot-check the data: the first, a middle and the last chunk.
	s, err = Open(d, Options{CacheBytes: memCache, Logger: testLogger})
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{0, memTotal / 2, memTotal - memWrite} {
		for i := 0; i < len(buf); i += 512 {
			buf[i] = byte(off>>20) + byte(i>>9)
		}
		got := make([]byte, memWrite)
		if n, err := s.Read(a.Ino, uint64(off), got); err != nil || n != memWrite || !bytes.Equal(got, buf) {
			t.Fatalf("read back at %d: %d %v", off, n, err)
		}
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	writeMemResult(t, out, r)
}
