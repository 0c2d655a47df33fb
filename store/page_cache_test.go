package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ustore/dev"
)

// countingDev is a device that counts read submissions (Read calls) and
// the IOs in them, to tell a cached read from a device one.
type countingDev struct {
	dev.Device
	reads, ios atomic.Int64
}

func (d *countingDev) Read(ios []dev.IO) error {
	d.reads.Add(1)
	d.ios.Add(int64(len(ios)))
	return d.Device.Read(ios)
}

// quiet are options under which nothing runs in the background during a
// test: no periodic commit, no expiry-driven writeback.
func quiet(o Options) Options {
	o.CommitInterval = 5 * time.Minute
	o.DirtyExpire = time.Hour
	return o
}

// checkBudget asserts the budget's accounting is exact: what nodes and
// pages are charged adds up to the budget's total, and every cached page
// is charged cleanPageBytes.
func checkBudget(t *testing.T, s *Store) {
	t.Helper()
	cs := s.CacheStats()
	if cs.Bytes != cs.NodeBytes+cs.PageBytes+cs.InodeBytes {
		t.Fatalf("budget holds %d bytes, nodes %d + pages %d + inodes %d", cs.Bytes, cs.NodeBytes, cs.PageBytes, cs.InodeBytes)
	}
	checkInodeCharges(t, s)
	if cs.PageBytes != cs.Pages*cleanPageBytes {
		t.Fatalf("pages charged %d bytes for %d pages of %d", cs.PageBytes, cs.Pages, cleanPageBytes)
	}
	var held int64
	s.pc.c.Range(func(_ uint64, p *cleanPage) bool {
		held += p.CacheBytes()
		if len(p.buf) != blockSize {
			t.Errorf("cached page of %d bytes", len(p.buf))
		}
		return true
	})
	if held != cs.PageBytes {
		t.Fatalf("cached pages hold %d bytes, charged %d", held, cs.PageBytes)
	}
	if err := s.pc.c.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestPageCache_Read_NoDeviceRoundTrip: data written back is cached, and
// so is data read from the device; reading it again submits nothing.
func TestPageCache_Read_NoDeviceRoundTrip(t *testing.T) {
	cd := &countingDev{Device: newTestDevice(t, 64<<20)}
	s := openTest(t, cd, quiet(Options{}))
	data := patternData(7, 1<<20+123)
	ino := mustCreate(t, s, RootIno, "f", data)
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	readAll := func(what string) {
		t.Helper()
		buf := make([]byte, len(data))
		before := cd.reads.Load()
		if n, err := s.Read(ino, 0, buf); err != nil || n != len(data) || !bytes.Equal(buf, data) {
			t.Fatalf("%s: n %d err %v equal %v", what, n, err, bytes.Equal(buf, data))
		}
		if got := cd.reads.Load() - before; got != 0 {
			t.Fatalf("%s: %d device reads, want 0 (cached)", what, got)
		}
	}
	readAll("after writeback")
	checkBudget(t, s)

	s = remount(t, s, cd, quiet(Options{}))
	buf := make([]byte, 64<<10)
	before := cd.reads.Load()
	if _, err := s.Read(ino, 0, buf); err != nil {
		t.Fatal(err)
	}
	if cd.reads.Load() == before {
		t.Fatal("first read after remount did not read the device")
	}
	for off := 0; off < len(data); off += len(buf) {
		n, err := s.Read(ino, uint64(off), buf)
		if err != nil || !bytes.Equal(buf[:n], data[off:off+n]) {
			t.Fatalf("read at %d: %v", off, err)
		}
	}
	readAll("after reading it once")
	if st := s.CacheStats(); st.PageHits == 0 || st.ReadAheadBlocks == 0 {
		t.Fatalf("stats %+v: want hits and read-ahead", st)
	}
	checkBudget(t, s)
	closeCheck(t, s)
}

// TestPageCache_Read_ReadAheadOneSubmission: a sequential reader of a file
// of several extents gets the read-ahead in the same submission as its own
// block — several IOs in one Read — and the blocks after it from memory.
func TestPageCache_Read_ReadAheadOneSubmission(t *testing.T) {
	cd := &countingDev{Device: newTestDevice(t, 64<<20)}
	s := openTest(t, cd, quiet(Options{}))
	// Four extents of 64 KiB each, written back one by one with a hole
	// block between them.
	data := make([]byte, 4*(64<<10+blockSize))
	var ino Ino
	for i := range 4 {
		off := i * (64<<10 + blockSize)
		copy(data[off:], patternData(byte(i+1), 64<<10))
		if i == 0 {
			ino = mustCreate(t, s, RootIno, "f", data[:64<<10])
		} else if _, err := s.Write(ino, uint64(off), data[off:off+64<<10]); err != nil {
			t.Fatal(err)
		}
		if err := s.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	data = data[:3*(64<<10+blockSize)+64<<10]
	s = remount(t, s, cd, quiet(Options{}))
	reads, ios := cd.reads.Load(), cd.ios.Load()
	buf := make([]byte, blockSize)
	for off := 0; off < len(data); off += blockSize {
		n, err := s.Read(ino, uint64(off), buf)
		if err != nil || !bytes.Equal(buf[:n], data[off:off+n]) {
			t.Fatalf("read at %d: n %d err %v", off, n, err)
		}
		if off == 0 {
			if got := cd.reads.Load() - reads; got != 1 {
				t.Fatalf("first read: %d submissions, want 1", got)
			}
			if got := cd.ios.Load() - ios; got < 4 {
				t.Fatalf("first read: %d IOs in its submission, want the 4 extents", got)
			}
		}
	}
	if got := cd.reads.Load() - reads; got != 1 {
		t.Fatalf("sequential read of %d blocks: %d submissions, want 1", len(data)/blockSize, got)
	}
	closeCheck(t, s)
}

// TestPageCache_Budget_Exact reads far more data than the budget through
// a small cache: the budget holds, nodes and pages share it, and the
// accounting is exact after every pass.
func TestPageCache_Budget_Exact(t *testing.T) {
	d := newTestDevice(t, 64<<20)
	const budget = 2 << 20
	// The cached path: read front to back, files twice the cache would
	// be scans, which cache nothing (scan_ring.go).
	opts := quiet(Options{CacheBytes: budget, ScanReadBytes: -1})
	s := openTest(t, d, opts)
	var inos []Ino
	for i := range 4 {
		inos = append(inos, mustCreate(t, s, RootIno, fmt.Sprintf("f%d", i), patternData(byte(i), 4<<20)))
	}
	s = remount(t, s, d, opts)
	buf := make([]byte, 256<<10)
	for pass := range 2 {
		for i, ino := range inos {
			for off := 0; off < 4<<20; off += len(buf) {
				if _, err := s.Read(ino, uint64(off), buf); err != nil {
					t.Fatal(err)
				}
			}
			checkBudget(t, s)
			if cs := s.CacheStats(); cs.Bytes > budget+cleanPageBytes || cs.Pages == 0 || cs.NodeBytes == 0 {
				t.Fatalf("pass %d file %d: %+v: want within %d, with nodes and pages", pass, i, cs, budget)
			}
		}
	}
	if cs := s.CacheStats(); cs.Evictions == 0 {
		t.Fatalf("%+v: 16 MiB through a 2 MiB cache evicted nothing", cs)
	}
	closeCheck(t, s)
}

// blockVersion fills a block with version v of block b: every word says
// both, so a read shows which version it got and that it is one whole.
func blockVersion(b, v uint64) []byte {
	buf := make([]byte, blockSize)
	for i := 0; i < blockSize; i += 16 {
		binary.LittleEndian.PutUint64(buf[i:], b)
		binary.LittleEndian.PutUint64(buf[i+8:], v)
	}
	return buf
}

// TestPageCache_Concurrent_NeverStale runs writers and readers on the same
// files at once, with writeback, syncs and a cache small enough to evict.
// A writer acknowledges block b's version v once its Write returns; a
// reader notes the acknowledged version before it reads, and must get at
// least that one: a stale cached block — one that survived an overwrite,
// or that a reader cached from the device after a writer's newer bytes
// were — shows an older version. Truncates and renames over a file, by
// the writer that owns it, change what is acknowledged as zeros (version
// 0 means the block reads as zeros, or as an older version of the
// replaced file only if the reader began before the change).
func TestPageCache_Concurrent_NeverStale(t *testing.T) { neverStaleRun(t, neverStale{}) }

// TestPageCache_Concurrent_NeverStaleAcrossEviction is the same run with
// the files' inodes evicted from the inode table all the while: each
// reload continues the inode's cache epoch (kept_epochs.go), and no read
// may see a block older than the last acknowledged write.
func TestPageCache_Concurrent_NeverStaleAcrossEviction(t *testing.T) {
	neverStaleRun(t, neverStale{evict: true})
}

// TestPageCache_Concurrent_NeverStaleSequential is the same run with
// sequential readers, each going through the files front to back, with
// ReadCached first: read-ahead in flight (its own submissions, in the
// background) meets the writers' overwrites, truncates and renames. The
// files are not scans (TestScanRing_Concurrent_NeverStale has them so).
func TestPageCache_Concurrent_NeverStaleSequential(t *testing.T) {
	neverStaleRun(t, neverStale{seq: true, cached: true})
}

// neverStale says how neverStaleRun varies: evict runs an evicter of
// inodes beside the writers and readers; cached makes the readers try
// ReadCached first, then Read if it declines, as the server's connection
// reader does; seq makes the readers sequential; scan makes their files
// scans (scan_ring.go), which without it are read through the cache.
type neverStale struct{ evict, cached, seq, scan bool }

// neverStaleRun is TestPageCache_Concurrent_NeverStale, varied by how.
func neverStaleRun(t *testing.T, how neverStale) {
	d := newTestDevice(t, 128<<20)
	const (
		files   = 3
		readers = 3
		rounds  = 3000
	)
	// Sequential readers read files of several chunks of read-ahead, in
	// a cache that holds a few chunks.
	blocks, cacheBytes := 64, int64(1<<20)
	if how.seq {
		blocks, cacheBytes = 4*readAheadChunkBlocks, 6<<20
	}
	opts := Options{CacheBytes: cacheBytes, DirtyBytes: 1 << 20, ScanReadBytes: -1}
	if how.scan {
		opts.ScanReadBytes = 0 // the default: a quarter of the cache, under a file's size
	}
	s := openTest(t, d, opts)
	type file struct {
		mu    sync.RWMutex // held for writing across a replacement (truncate, rename over)
		ino   atomic.Uint64
		acked []atomic.Uint64 // latest acknowledged version per block
	}
	var fs [files]file
	for i := range fs {
		ino := mustCreate(t, s, RootIno, fmt.Sprintf("f%d", i), nil)
		fs[i].ino.Store(uint64(ino))
		fs[i].acked = make([]atomic.Uint64, blocks)
	}
	var version atomic.Uint64
	var wg sync.WaitGroup
	errs := make(chan error, files+readers)
	for w := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := &fs[w]
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for r := range rounds {
				switch op := rng.IntN(40); {
				case op == 0: // truncate to zero and back: every block reads as zeros
					f.mu.Lock()
					ino := Ino(f.ino.Load())
					err := s.Truncate(ino, 0)
					if err == nil {
						err = s.Truncate(ino, uint64(blocks)*blockSize)
					}
					for b := range f.acked {
						f.acked[b].Store(0)
					}
					f.mu.Unlock()
					if err != nil {
						errs <- err
						return
					}
				case op == 1: // rename a fresh, empty file over it
					f.mu.Lock()
					tmp := fmt.Sprintf("t%d.%d", w, r)
					a, err := s.Create(RootIno, tmp, 0o644)
					if err == nil {
						err = s.Truncate(a.Ino, uint64(blocks)*blockSize)
					}
					if err == nil {
						err = s.Rename(RootIno, tmp, RootIno, fmt.Sprintf("f%d", w))
					}
					f.ino.Store(uint64(a.Ino))
					for b := range f.acked {
						f.acked[b].Store(0)
					}
					f.mu.Unlock()
					if err != nil {
						errs <- err
						return
					}
				case op < 6:
					if err := s.Sync(context.Background()); err != nil {
						errs <- err
						return
					}
				default:
					b := uint64(rng.IntN(blocks))
					v := version.Add(1)
					f.mu.RLock()
					_, err := s.Write(Ino(f.ino.Load()), b*blockSize, blockVersion(b, v))
					if err == nil {
						f.acked[b].Store(v)
					}
					f.mu.RUnlock()
					if err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	stop := make(chan struct{})
	var rwg sync.WaitGroup
	for r := range readers {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 2))
			buf := make([]byte, 4*blockSize)
			var pos [files]uint64 // a sequential reader's next block in each file
			for {
				select {
				case <-stop:
					return
				default:
				}
				fi := rng.IntN(files)
				f := &fs[fi]
				b := uint64(rng.IntN(blocks - 3))
				if how.seq {
					b, pos[fi] = pos[fi], (pos[fi]+4)%uint64(blocks-3)
				}
				f.mu.RLock()
				var want [4]uint64
				for i := range want {
					want[i] = f.acked[b+uint64(i)].Load()
				}
				var n int
				var err error
				ok := false
				if how.cached {
					n, ok = s.ReadCached(Ino(f.ino.Load()), b*blockSize, buf)
				}
				if !ok {
					n, err = s.Read(Ino(f.ino.Load()), b*blockSize, buf)
				}
				f.mu.RUnlock()
				if err != nil {
					errs <- err
					return
				}
				for i := range want {
					blk := buf[i*blockSize : (i+1)*blockSize]
					if i*blockSize >= n {
						clear(blk)
					}
					gotB := binary.LittleEndian.Uint64(blk)
					gotV := binary.LittleEndian.Uint64(blk[8:])
					if gotB == 0 && gotV == 0 && want[i] == 0 {
						continue
					}
					if !bytes.Equal(blk, blockVersion(b+uint64(i), gotV)) || gotB != b+uint64(i) {
						errs <- fmt.Errorf("block %d: torn or foreign bytes (block %d version %d)", b+uint64(i), gotB, gotV)
						return
					}
					if gotV < want[i] {
						errs <- fmt.Errorf("block %d: read version %d, version %d was acknowledged before the read", b+uint64(i), gotV, want[i])
						return
					}
				}
			}
		}()
	}
	if how.evict {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				evictInodes(s)
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	close(stop)
	rwg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	waitChunks(t, s, 0)
	cs := s.CacheStats()
	if cs.PageHits == 0 || cs.Evictions == 0 {
		t.Fatalf("%+v: the test wants cache hits and evictions to mean anything", cs)
	}
	t.Logf("cache %+v", cs)
	if how.evict && cs.EpochsResumed == 0 {
		t.Fatalf("%+v: no inode continued its epoch after an eviction", cs)
	}
	if how.cached && cs.CachedReads == 0 {
		t.Fatalf("%+v: ReadCached served no read", cs)
	}
	if how.seq && cs.ReadAheadSubmissions == 0 {
		t.Fatalf("%+v: no read-ahead in the background", cs)
	}
	if how.scan != (cs.ScanBlocks > 0) {
		t.Fatalf("%+v: %d blocks read from the scan ring, want some only with scans", cs, cs.ScanBlocks)
	}
	closeCheck(t, s)
}

// TestPageCache_Read_FillAfterOverwrite: a read that fetched a block from
// the device, overtaken before it caches it by a write of the block and
// its writeback (which caches the new bytes), must not cache the old ones
// over them. The hook runs the write in that window, deterministically.
func TestPageCache_Read_FillAfterOverwrite(t *testing.T) {
	d := newTestDevice(t, 64<<20)
	s := openTest(t, d, quiet(Options{}))
	old, fresh := blockVersion(3, 1), blockVersion(3, 2)
	ino := mustCreate(t, s, RootIno, "f", old)
	s = remount(t, s, d, quiet(Options{}))
	ran := false
	testHookBeforeFill = func(got Ino) {
		if ran || got != ino {
			return
		}
		ran = true
		if _, err := s.Write(ino, 0, fresh); err != nil {
			t.Error(err)
		}
		if err := s.Sync(context.Background()); err != nil {
			t.Error(err)
		}
	}
	defer func() { testHookBeforeFill = nil }()
	buf := make([]byte, blockSize)
	if _, err := s.Read(ino, 0, buf); err != nil || !bytes.Equal(buf, old) {
		t.Fatalf("first read: %v, old bytes %v", err, bytes.Equal(buf, old))
	}
	if !ran {
		t.Fatal("the hook did not run: the first read did not read the device")
	}
	if _, err := s.Read(ino, 0, buf); err != nil || !bytes.Equal(buf, fresh) {
		t.Fatalf("read after the overwrite's writeback: %v, stale %v", err, bytes.Equal(buf, old))
	}
	closeCheck(t, s)
}
