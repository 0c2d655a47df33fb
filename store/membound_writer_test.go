package store

import (
	"bytes"
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

// The memory bound with writers: TestMem_InodesAndData's budgets (cache
// 32 MiB, dirty 8 MiB), the runtime's soft limit at Store.MemoryLimit as
// `ustore serve` sets it, and a child process that first creates
// memInodes() files (memWriterInodes: the cache full of inodes and nodes,
// as a server's is) and then writes memDataFactor × the cache budget
// (320 MiB) into memWriterFiles files, a writer goroutine each, in
// memWriterWrite writes with an fsync every memWriterFsyncEvery: the
// dirty budget is refilled and written back forty times over, by as many
// writebacks at once as there are writers and the flusher. The bound is
// the same: the process's resident set stays within cache + dirty +
// 64 MiB. TestMem_Bound bounds a lone writer too, with no soft limit and
// a bound of twice its heap; this is writers under the one budget a
// deployment gives.
//
// What it guards: writeback's staging buffers (wbChunkBytes each) are the
// store's own, a bounded set made on first use and kept (wbStagingSet).
// As a sync.Pool they failed this test at 109.5-116.1 MiB (live heap up
// to 109-114 MiB; with the set, 91-98 MiB and 60 MiB): every
// writeback in progress held its own, up to one per writer here, and
// every collection emptied the pool — near the soft limit the collector
// runs every few writebacks — so they were allocated again and again
// (docs/BENCHMARKS.md, "Writer RSS under the one budget").
//
// The writers' own buffers are the test's memory in the bound (a server's
// request buffers are in it too): 16 × 64 KiB, not 16 MiB of 1 MiB
// writes. The parent reads every file back afterwards on a store of its
// own: the child's memory is the writes' alone.
const (
	memWriterChildEnv = "USTORE_MEMWRITER_CHILD"
	memWriterDevEnv   = "USTORE_MEMWRITER_DEV"
	memWriterDevSize  = memDataFactor*memInodesCache + 512<<20
	memWriterFiles    = 16
	memWriterWrite    = 64 << 10
	memWriterPerFile  = memDataFactor * memInodesCache / memWriterFiles
	// memWriterFsyncEvery: each writer fsyncs its file every 1 MiB, so
	// that writebacks run at once — the flusher's and the writers'
	// fsyncs — as they do under a server's clients.
	memWriterFsyncEvery = 1 << 20
)

// memWriterResult is what the writer child reports.
type memWriterResult struct {
	Written      int64
	Seconds      float64
	BaseRSS      uint64 // VmRSS before the store was opened
	VmHWM        uint64
	MaxLiveHeap  uint64
	MaxDirty     int64
	WritebackBlk uint64
	GCs          uint64
	// StagingMade is how many staging buffers writeback made, of
	// StagingCap.
	StagingMade, StagingCap int
	// MaxRSS is the largest VmRSS the child sampled; the heap then
	// (atPeak), and the mapped files (the binary's pages).
	MaxRSS                                                     uint64
	PeakHeapObjects, PeakHeapUnused, PeakHeapFree, PeakRssFile uint64
	// GoMapped is the memory the Go runtime held at the end, as
	// TestMem_InodesAndData's.
	GoMapped uint64
}

func TestMem_Writer(t *testing.T) {
	if out := os.Getenv(memWriterChildEnv); out != "" {
		memWriterChild(t, out)
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
	var r memWriterResult
	maxRSS := runMemChild(t, "TestMem_Writer", []string{memWriterChildEnv + "=" + resFile, memWriterDevEnv + "=" + devFile}, resFile, &r)
	const mib = 1 << 20
	t.Logf("wrote %d MiB in %.1fs (%d blocks written back, %d GCs); dirty max %.2f MiB; staging buffers %d of %d; "+
		"live heap max %.1f MiB; at the child's peak VmRSS (%.1f MiB): heap objects %.1f MiB, unused in spans %.1f MiB, free spans %.1f MiB, files %.1f MiB; "+
		"Go runtime's memory at the end %.1f MiB; RSS before open %.1f MiB, VmHWM %.1f MiB, sampled VmRSS max %.1f MiB (bound %d MiB)",
		r.Written/mib, r.Seconds, r.WritebackBlk, r.GCs, float64(r.MaxDirty)/mib, r.StagingMade, r.StagingCap,
		float64(r.MaxLiveHeap)/mib, float64(r.MaxRSS)/mib, float64(r.PeakHeapObjects)/mib, float64(r.PeakHeapUnused)/mib,
		float64(r.PeakHeapFree)/mib, float64(r.PeakRssFile)/mib, float64(r.GoMapped)/mib,
		float64(r.BaseRSS)/mib, float64(r.VmHWM)/mib, float64(maxRSS)/mib, memInodesBound/mib)
	if r.Written != memDataFactor*memInodesCache {
		t.Fatalf("the child wrote %d bytes, want %d", r.Written, memDataFactor*memInodesCache)
	}
	if r.WritebackBlk < uint64(r.Written)/blockSize {
		t.Fatalf("only %d blocks written back of %d", r.WritebackBlk, r.Written/blockSize)
	}
	if r.StagingMade > r.StagingCap {
		t.Errorf("writeback made %d staging buffers, cap %d", r.StagingMade, r.StagingCap)
	}
	if r.VmHWM > memInodesBound {
		t.Errorf("peak RSS (VmHWM) %.1f MiB, bound %d MiB (cache + dirty + 64 MiB)", float64(r.VmHWM)/mib, memInodesBound/mib)
	}
	if maxRSS > memInodesBound {
		t.Errorf("sampled RSS %.1f MiB, bound %d MiB (cache + dirty + 64 MiB)", float64(maxRSS)/mib, memInodesBound/mib)
	}
	memWriterVerify(t, devFile)
}

// memWriterInodes creates memInodes() files in directories of 1,000,
// syncing every memSyncEvery, as TestMem_InodesAndData's create phase:
// the cache budget is then full of inodes and tree nodes, as a server's
// is, when the writers start.
func memWriterInodes(t *testing.T, s *Store) {
	var dir Ino
	for i := range memInodes() {
		if i%memInodesPerDir == 0 {
			a, err := s.Mkdir(RootIno, fmt.Sprintf("d%d", i/memInodesPerDir), 0o755)
			if err != nil {
				t.Fatal(err)
			}
			dir = a.Ino
		}
		if _, err := s.Create(dir, fmt.Sprintf("f%d", i), 0o644); err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
		if i%memSyncEvery == memSyncEvery-1 {
			if err := s.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// memWriterPattern fills buf with what file f holds at off: a byte every
// 512, a function of the file and the byte's offset.
func memWriterPattern(buf []byte, f int, off int64) {
	for i := 0; i < len(buf); i += 512 {
		p := off + int64(i)
		buf[i] = byte(f) ^ byte(p>>9) ^ byte(p>>17)
	}
}

// memWriterChild formats the device, writes the files and reports what it
// saw to the file out.
func memWriterChild(t *testing.T, out string) {
	d, err := sysdev.Open(os.Getenv(memWriterDevEnv), sysdev.Options{Size: memWriterDevSize, Direct: true, Workers: 8, Logger: testLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := Mkfs(d, MkfsOptions{}); err != nil {
		t.Fatal(err)
	}
	var r memWriterResult
	s, base := openMemChild(t, d)
	r.BaseRSS = base
	var mu sync.Mutex
	var written atomic.Int64
	// atPeak splits the heap when the child's VmRSS is at its highest:
	// objects (live and not yet collected), unused (room in spans that
	// hold objects: fragmentation) and free (spans free, not yet given back).
	atPeak := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}, {Name: "/memory/classes/heap/free:bytes"}}
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	sample := func() {
		mu.Lock()
		defer mu.Unlock()
		r.MaxDirty = max(r.MaxDirty, s.Stats().DirtyBytes)
		metrics.Read(live)
		r.MaxLiveHeap = max(r.MaxLiveHeap, live[0].Value.Uint64())
		if rss, err := procStatus("self", "VmRSS"); err == nil && rss > r.MaxRSS {
			r.MaxRSS = rss
			metrics.Read(atPeak)
			r.PeakHeapObjects, r.PeakHeapUnused, r.PeakHeapFree = atPeak[0].Value.Uint64(), atPeak[1].Value.Uint64(), atPeak[2].Value.Uint64()
			r.PeakRssFile, _ = procStatus("self", "RssFile")
		}
	}
	stopSampling := sampleEvery(time.Millisecond, sample)
	ctx := context.Background()
	memWriterInodes(t, s)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, memWriterFiles)
	for f := range memWriterFiles {
		wg.Go(func() {
			a, err := s.Create(RootIno, fmt.Sprintf("data%d", f), 0o644)
			if err != nil {
				errs <- err
				return
			}
			buf := make([]byte, memWriterWrite)
			for off := int64(0); off < memWriterPerFile; off += int64(len(buf)) {
				memWriterPattern(buf, f, off)
				if n, err := s.Write(a.Ino, uint64(off), buf); err != nil || n != len(buf) {
					errs <- fmt.Errorf("write file %d at %d: %d %v", f, off, n, err)
					return
				}
				written.Add(int64(len(buf)))
				if (off+int64(len(buf)))%memWriterFsyncEvery == 0 {
					if err := s.Fsync(ctx, a.Ino, false); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	r.Written = written.Load()
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	stopSampling()
	r.Seconds = time.Since(start).Seconds()
	r.WritebackBlk = s.Stats().WritebackBlocks
	r.StagingMade, r.StagingCap = s.wbStaging.madeCount(), s.wbStaging.capacity()
	r.VmHWM, _ = procStatus("self", "VmHWM")
	mem := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(mem)
	r.GoMapped = mem[0].Value.Uint64() - mem[1].Value.Uint64()
	r.GCs = mem[2].Value.Uint64()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	writeMemResult(t, out, r)
}

// memWriterVerify reads every file the child wrote back, in the parent.
func memWriterVerify(t *testing.T, path string) {
	d, err := sysdev.Open(path, sysdev.Options{Size: memWriterDevSize, Direct: true, Workers: 8, Logger: testLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s, err := Open(d, Options{CacheBytes: memInodesCache, Logger: testLogger})
	if err != nil {
		t.Fatal(err)
	}
	want, got := make([]byte, 1<<20), make([]byte, 1<<20)
	for f := range memWriterFiles {
		a, err := s.Lookup(RootIno, fmt.Sprintf("data%d", f))
		if err != nil {
			t.Fatal(err)
		}
		for off := int64(0); off < memWriterPerFile; off += int64(len(got)) {
			memWriterPattern(want, f, off)
			if n, err := s.Read(a.Ino, uint64(off), got); err != nil || n != len(got) || !bytes.Equal(got, want) {
				t.Fatalf("read back file %d at %d: %d %v", f, off, n, err)
			}
		}
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
