package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ustore/dev/sysdev"
)

// The memory bound with inodes and data: touching many inodes and ten
// times the cache budget in file data keeps the process's resident set
// within cache budget + dirty budget + 64 MiB. Inodes, tree nodes and
// clean data pages share the cache budget, each charged in bytes
// (inode_charge.go), so the inodes touched only displace the rest. The
// store before it kept inodes by count — and only on loads: a create
// never evicted — and failed this test at 153-160 MiB, whether its cap
// was 65,536 inodes or unbounded (docs/BENCHMARKS.md).
//
// The parent formats a file device (opened with O_DIRECT, so device bytes
// are never the process's) and writes memDataFactor × the cache budget
// of data into memDataFiles files: a writer's memory is TestMem_Bound's.
// The child, as TestMem_Bound's (memChildEnv there), opens it with
// memInodesCache and memInodesDirty, gives the Go runtime the store's
// MemoryLimit as `ustore serve` does, and: creates memInodes files in
// directories of 1,000, syncing every memSyncEvery creates (dirty tree
// nodes are pinned until their commit; the engine has no dirty-metadata
// budget of its own, so a client that never syncs leaves that bound to
// the commit interval); then looks up and stats every file again, in
// creation order, so that each inode is loaded once more after it was
// evicted; then reads all the data. The parent samples VmRSS, the child
// reports VmHWM, and both must be within the bound.
//
// Sizes: 100,000 inodes by default (about 35 s on a loaded 2-core
// machine, the parent's writing included), 1,000,000 with
// USTORE_MEM_FULL=1 (about 4 minutes). The bound does not scale with the
// count: it is the budgets + 64 MiB whatever is touched, and the default
// count already takes, as inodes, more than the bound leaves for them.
const (
	memInodesChildEnv = "USTORE_MEMINODES_CHILD"
	memInodesDevEnv   = "USTORE_MEMINODES_DEV"
	memInodesCache    = 32 << 20
	memInodesDirty    = 8 << 20
	memInodesSlack    = 64 << 20
	memInodesBound    = memInodesCache + memInodesDirty + memInodesSlack
	memInodesPerDir   = 1000
	memSyncEvery      = 16384
	memDataFactor     = 10
	memDataFiles      = 8
)

// memInodes is the number of inodes the run touches.
func memInodes() int {
	if v := os.Getenv("USTORE_MEM_FULL"); v != "" && v != "0" {
		return 1_000_000
	}
	return 100_000
}

// memInodesResult is what the child reports.
type memInodesResult struct {
	Inodes, DataBytes          int64
	CreateSec, StatSec, IOSec  float64
	BaseRSS, VmHWM             uint64
	MaxInodesInMemory          int64
	InodeEvictions, Evictions  int64
	InodeBytes, CacheBytes     int64
	MaxBudgetBytes, BudgetSize int64
	// MaxLiveHeap is the largest live heap a collection saw in each
	// phase: create, stat, read.
	MaxLiveHeap [3]uint64
	// MaxRSS is the largest VmRSS the child saw in each phase.
	MaxRSS [3]uint64
	// GoMapped is the memory the Go runtime held at the end
	// (/memory/classes/total less heap/released), the figure the memory
	// limit bounds.
	GoMapped uint64
	// RssAnon and RssFile split the resident set at the end: anonymous
	// memory (the heap, stacks, the runtime's) and mapped files (the
	// binary's pages).
	RssAnon, RssFile uint64
}

func TestMem_InodesAndData(t *testing.T) {
	if out := os.Getenv(memInodesChildEnv); out != "" {
		memInodesChild(t, out)
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc: Linux only")
	}
	if raceEnabled() {
		t.Skip("the race runtime's shadow memory is not the store's: TestMem_Bound covers -race")
	}
	dir := t.TempDir()
	resFile, devFile := filepath.Join(dir, "result.json"), filepath.Join(dir, "dev")
	memInodesPrepare(t, devFile)
	var r memInodesResult
	maxRSS := runMemChild(t, "TestMem_InodesAndData", []string{memInodesChildEnv + "=" + resFile, memInodesDevEnv + "=" + devFile}, resFile, &r)
	const mib = 1 << 20
	t.Logf("%d inodes (create %.1fs, stat %.1fs), %d MiB read (%.1fs); inodes in memory at most %d, "+
		"%d inodes and %d pages evicted; budget held at most %.1f MiB of %d (inodes %.1f MiB at the end); "+
		"live heap max %.1f/%.1f/%.1f MiB, RSS max %.1f/%.1f/%.1f MiB (create/stat/read), Go runtime's memory at the end %.1f MiB (resident: %.1f MiB anonymous, %.1f MiB of files); RSS before open %.1f MiB, VmHWM %.1f MiB, sampled VmRSS max %.1f MiB (bound %d MiB)",
		r.Inodes, r.CreateSec, r.StatSec, r.DataBytes/mib, r.IOSec, r.MaxInodesInMemory, r.InodeEvictions, r.Evictions,
		float64(r.MaxBudgetBytes)/mib, r.BudgetSize/mib, float64(r.InodeBytes)/mib,
		float64(r.MaxLiveHeap[0])/mib, float64(r.MaxLiveHeap[1])/mib, float64(r.MaxLiveHeap[2])/mib,
		float64(r.MaxRSS[0])/mib, float64(r.MaxRSS[1])/mib, float64(r.MaxRSS[2])/mib,
		float64(r.GoMapped)/mib, float64(r.RssAnon)/mib, float64(r.RssFile)/mib,
		float64(r.BaseRSS)/mib, float64(r.VmHWM)/mib, float64(maxRSS)/mib, memInodesBound/mib)
	if r.Inodes != int64(memInodes()) || r.DataBytes != memDataFactor*memInodesCache {
		t.Fatalf("the child touched %d inodes and %d bytes, want %d and %d", r.Inodes, r.DataBytes, memInodes(), memDataFactor*memInodesCache)
	}
	if r.InodeEvictions == 0 || r.MaxInodesInMemory >= r.Inodes {
		t.Fatalf("no inode left memory (%d evicted, %d in memory at most): the budget did not bound them", r.InodeEvictions, r.MaxInodesInMemory)
	}
	if r.VmHWM > memInodesBound {
		t.Errorf("peak RSS (VmHWM) %.1f MiB, bound %d MiB (cache + dirty + 64 MiB)", float64(r.VmHWM)/mib, memInodesBound/mib)
	}
	if maxRSS > memInodesBound {
		t.Errorf("sampled RSS %.1f MiB, bound %d MiB (cache + dirty + 64 MiB)", float64(maxRSS)/mib, memInodesBound/mib)
	}
}

// memInodesDevSize is the device's size: room for the inodes' items and
// the data, with space to spare for copy-on-write.
func memInodesDevSize() int64 {
	return int64(memInodes())*2048 + memDataFactor*memInodesCache + 512<<20
}

// memInodesPrepare formats the device file path and writes the data
// files, in the parent: the child's memory is then the inodes' and the
// reads' (a writer's is TestMem_Bound's).
func memInodesPrepare(t *testing.T, path string) {
	d, err := sysdev.Open(path, sysdev.Options{Size: memInodesDevSize(), Direct: true, Workers: 8, Logger: testLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := Mkfs(d, MkfsOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err := Open(d, Options{Logger: testLogger})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	for f := range memDataFiles {
		a, err := s.Create(RootIno, fmt.Sprintf("data%d", f), 0o644)
		if err != nil {
			t.Fatal(err)
		}
		for off := int64(0); off < memPerFile; off += int64(len(buf)) {
			buf[0], buf[len(buf)-1] = byte(f), byte(off>>20)
			if n, err := s.Write(a.Ino, uint64(off), buf); err != nil || n != len(buf) {
				t.Fatalf("write: %d %v", n, err)
			}
		}
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// memPerFile is each data file's size.
const memPerFile = memDataFactor * memInodesCache / memDataFiles

// memInodesChild runs the workload and writes what it saw to out.
func memInodesChild(t *testing.T, out string) {
	n := memInodes()
	d, err := sysdev.Open(os.Getenv(memInodesDevEnv), sysdev.Options{Size: memInodesDevSize(), Direct: true, Workers: 8, Logger: testLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var r memInodesResult
	s, base := openMemChild(t, d)
	r.BaseRSS = base
	ctx := context.Background()
	var phase atomic.Int32
	var mu sync.Mutex
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	sample := func() {
		mu.Lock()
		defer mu.Unlock()
		cs := s.CacheStats()
		r.MaxInodesInMemory = max(r.MaxInodesInMemory, cs.Inodes)
		r.MaxBudgetBytes = max(r.MaxBudgetBytes, cs.Bytes)
		metrics.Read(live)
		p := phase.Load()
		r.MaxLiveHeap[p] = max(r.MaxLiveHeap[p], live[0].Value.Uint64())
		if rss, err := procStatus("self", "VmRSS"); err == nil {
			r.MaxRSS[p] = max(r.MaxRSS[p], rss)
		}
	}
	stopSampling := sampleEvery(time.Millisecond, sample)

	start := time.Now()
	// Only the directories' numbers are kept: a slice of a million inode
	// numbers would be 8 MiB of the test's own in the bound.
	var dirs []Ino
	for i := range n {
		if i%memInodesPerDir == 0 {
			a, err := s.Mkdir(RootIno, fmt.Sprintf("d%d", i/memInodesPerDir), 0o755)
			if err != nil {
				t.Fatal(err)
			}
			dirs = append(dirs, a.Ino)
		}
		if _, err := s.Create(dirs[len(dirs)-1], fmt.Sprintf("f%d", i), 0o644); err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
		if i%memSyncEvery == memSyncEvery-1 {
			if err := s.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			sample()
		}
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	sample()
	r.CreateSec = time.Since(start).Seconds()
	phase.Store(1)
	start = time.Now()
	for i := range n {
		a, err := s.Lookup(dirs[i/memInodesPerDir], fmt.Sprintf("f%d", i))
		if err != nil {
			t.Fatalf("lookup f%d: %v", i, err)
		}
		if _, err := s.Stat(a.Ino); err != nil {
			t.Fatalf("stat %d: %v", a.Ino, err)
		}
		if i%memSyncEvery == 0 {
			sample()
		}
		r.Inodes++
	}
	r.StatSec = time.Since(start).Seconds()
	phase.Store(2)

	start = time.Now()
	var files []Ino
	for f := range memDataFiles {
		a, err := s.Lookup(RootIno, fmt.Sprintf("data%d", f))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, a.Ino)
	}
	buf := make([]byte, 1<<20)
	for f, ino := range files {
		for off := int64(0); off < memPerFile; off += int64(len(buf)) {
			if n, err := s.Read(ino, uint64(off), buf); err != nil || n != len(buf) || buf[0] != byte(f) || buf[len(buf)-1] != byte(off>>20) {
				t.Fatalf("read back file %d at %d: %d %v", f, off, n, err)
			}
			r.DataBytes += int64(len(buf))
		}
		sample()
	}
	r.IOSec = time.Since(start).Seconds()
	stopSampling()
	cs := s.CacheStats()
	r.InodeEvictions, r.Evictions, r.InodeBytes, r.CacheBytes, r.BudgetSize = cs.InodeEvictions, cs.Evictions, cs.InodeBytes, cs.Bytes, cs.BudgetBytes
	r.VmHWM, _ = procStatus("self", "VmHWM")
	mem := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(mem)
	r.GoMapped = mem[0].Value.Uint64() - mem[1].Value.Uint64()
	r.RssAnon, _ = procStatus("self", "RssAnon")
	r.RssFile, _ = procStatus("self", "RssFile")
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	writeMemResult(t, out, r)
}
