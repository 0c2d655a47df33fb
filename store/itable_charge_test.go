package store

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"unsafe"
)

// checkInodeCharges checks the inode cache's accounting against the
// table: the inodes in memory are exactly the cache's entries, each
// charged what its state computes now, and the cache's bytes are the sum
// of those charges (with no concurrent change).
func checkInodeCharges(t *testing.T, s *Store) {
	t.Helper()
	var held, n int64
	for i := range s.itab.shards {
		sh := &s.itab.shards[i]
		sh.mu.Lock()
		for _, in := range sh.m {
			in.mu.Lock()
			c, want := in.charge.Load(), in.chargeLocked()
			in.mu.Unlock()
			if c != want {
				t.Errorf("inode %d charged %d, its state computes %d", in.ino, c, want)
			}
			held += c
			n++
		}
		sh.mu.Unlock()
	}
	var cached, entries int64
	s.itab.c.Range(func(_ uint64, in *inode) bool {
		cached += in.CacheBytes()
		entries++
		return true
	})
	cs := s.CacheStats()
	if n != cs.Inodes || entries != n {
		t.Fatalf("%d inodes in the table, %d in the cache (Inodes %d)", n, entries, cs.Inodes)
	}
	if held != cs.InodeBytes || cached != held {
		t.Fatalf("inodes hold %d bytes, the cache's entries %d, charged %d", held, cached, cs.InodeBytes)
	}
	if err := s.itab.c.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestItable_Charge_FollowsPageMaps: an inode's charge grows with its
// buffered pages' maps as they double, is the same through writeback's
// move of the pages to the writeback map, and falls back to the fixed
// part when it is clean (the maps made afresh); the accounting is exact
// at every step.
func TestItable_Charge_FollowsPageMaps(t *testing.T) {
	s := openTest(t, newTestDevice(t, 64<<20), quiet(Options{}))
	a, err := s.Create(RootIno, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	charge := func() int64 {
		in := s.itab.peek(a.Ino)
		if in == nil {
			t.Fatal("the inode is not in memory")
		}
		return in.charge.Load()
	}
	if c := charge(); c != inodeFixedBytes {
		t.Fatalf("a new inode charged %d, want the fixed %d", c, inodeFixedBytes)
	}
	checkBudget(t, s)
	const blocks = 1000
	buf := patternData(1, blockSize)
	last := charge()
	grew := 0
	for b := range uint64(blocks) {
		if _, err := s.Write(a.Ino, b*blockSize, buf); err != nil {
			t.Fatal(err)
		}
		if c := charge(); c != last {
			if c < last {
				t.Fatalf("block %d: the charge fell from %d to %d while pages were added", b, last, c)
			}
			last, grew = c, grew+1
		}
	}
	if want := inodeFixedBytes - pageMapBytes(0) + pageMapBytes(blocks); last != want {
		t.Fatalf("%d dirty pages: charged %d, want %d", blocks, last, want)
	}
	// A group, then tables of 16 to 1024 slots (1000 pages need 2048
	// slots' worth: two tables): about seven growth steps, each one Add.
	if grew < 5 || grew > 10 {
		t.Fatalf("the charge changed %d times over %d pages, want one per map growth (5-10)", grew, blocks)
	}
	checkBudget(t, s)
	if err := s.Fsync(context.Background(), a.Ino, false); err != nil {
		t.Fatal(err)
	}
	if c := charge(); c != inodeFixedBytes {
		t.Fatalf("after writeback: charged %d, want the fixed %d (the maps made afresh)", c, inodeFixedBytes)
	}
	checkBudget(t, s)
	closeCheck(t, s)
}

// liveHeap returns the live heap after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestItable_Charge_Heap: the fixed charge of an inode is what loading
// one takes from the heap. The inode items' tree nodes are cached first
// (a lookup of each item), so that what the loads add is the inodes
// alone: their structs, page maps, and slots in the table, its mirror
// and the inode cache. The charge must be within 25% of the measure, and
// never below 80% of it (a charge too low lets memory pass the budget).
func TestItable_Charge_Heap(t *testing.T) {
	if raceEnabled() {
		t.Skip("the race detector's allocations are not the program's")
	}
	const n = 20000
	d := newTestDevice(t, 128<<20)
	opts := quiet(Options{CacheBytes: 1 << 30})
	s := openTest(t, d, opts)
	inos := make([]Ino, n)
	for i := range inos {
		a, err := s.Create(RootIno, fmt.Sprintf("f%d", i), 0o644)
		if err != nil {
			t.Fatal(err)
		}
		inos[i] = a.Ino
	}
	s = remount(t, s, d, opts)
	for _, ino := range inos {
		if _, err := s.fs.Lookup(inodeKey(ino)); err != nil {
			t.Fatal(err)
		}
	}
	before, inodesBefore := liveHeap(), s.itab.count()
	nodesBefore := s.e.CacheStats().Bytes
	for _, ino := range inos {
		if _, err := s.Stat(ino); err != nil {
			t.Fatal(err)
		}
	}
	after := liveHeap()
	if got := s.itab.count() - inodesBefore; got != n {
		t.Fatalf("%d inodes loaded, want %d", got, n)
	}
	if nb := s.e.CacheStats().Bytes; nb != nodesBefore {
		t.Fatalf("node cache %d bytes, was %d: the loads read nodes, the measure is not the inodes'", nb, nodesBefore)
	}
	per := float64(after-before) / n
	ratio := float64(inodeFixedBytes) / per
	t.Logf("an inode takes %.0f bytes of heap, is charged %d (%.2f×); its struct %d bytes", per, inodeFixedBytes, ratio, unsafe.Sizeof(inode{}))
	if ratio < 0.8 || ratio > 1.25 {
		t.Fatalf("charge %d for %.0f bytes measured: %.2f×, want within [0.8, 1.25]", inodeFixedBytes, per, ratio)
	}
	checkBudget(t, s)
	closeCheck(t, s)
}

// TestItable_PageMapBytes_Heap: pageMapBytes is what maps of buffered
// pages of each size take from the heap, within 15% (one group, tables
// that double, tables that split) — except within a few percent of a
// doubling of the tables, where some split before the others and the
// charge counts them all split: up to twice the measure there. Never more
// than 15% low.
func TestItable_PageMapBytes_Heap(t *testing.T) {
	if raceEnabled() {
		t.Skip("the race detector's allocations are not the program's")
	}
	p := &page{}
	for _, n := range []int{0, 1, 8, 9, 14, 15, 50, 500, 896, 897, 1700, 1750, 1792, 1800, 3000, 3500, 10000} {
		k := max(8<<20/int(pageMapBytes(n)), 16)
		maps := make([]map[uint64]*page, k)
		before := liveHeap()
		for i := range maps {
			m := map[uint64]*page{}
			for b := range uint64(n) {
				m[b*7919] = p
			}
			maps[i] = m
		}
		after := liveHeap()
		per := float64(after-before) / float64(k)
		runtime.KeepAlive(maps)
		ratio := float64(pageMapBytes(n)) / per
		t.Logf("%5d pages: %8.0f bytes measured, %8d computed (%.2f×)", n, per, pageMapBytes(n), ratio)
		high := 1.15
		for tables := 1; tables*896 < 16*n; tables *= 2 {
			if b := tables * 896; tables > 1 && n > b-b/32 && n < b+b/16 {
				high = 2.05 // the band about a doubling
			}
		}
		if ratio < 0.85 || ratio > high {
			t.Errorf("map of %d pages: computed %d, measured %.0f (%.2f×)", n, pageMapBytes(n), per, ratio)
		}
	}
}

// TestItable_Evict_HotStayColdGo fills a 2 MiB budget with all three
// kinds — the nodes of 3,000 files' items, their inodes, one data block
// of each (4 KiB: not inline) — and streams the cold files through it (a lookup, a stat and a
// read of each, once) while a hot set of 32 files is used again between
// every 16 cold ones. Every kind is evicted, and the hot files' inodes
// and blocks are not: at the end each hot file is read with its inode
// still in memory and no device read. The accounting is exact after
// every round.
func TestItable_Evict_HotStayColdGo(t *testing.T) {
	const (
		files = 3000
		hot   = 32
		burst = 16
	)
	cd := &countingDev{Device: newTestDevice(t, 128<<20)}
	opts := quiet(Options{CacheBytes: 2 << 20})
	s := openTest(t, cd, opts)
	inos := make([]Ino, files)
	for i := range inos {
		inos[i] = mustCreate(t, s, RootIno, fmt.Sprintf("f%d", i), patternData(byte(i), blockSize))
	}
	s = remount(t, s, cd, opts)
	buf := make([]byte, 100)
	use := func(i int) {
		t.Helper()
		a, err := s.Lookup(RootIno, fmt.Sprintf("f%d", i))
		if err != nil || a.Ino != inos[i] {
			t.Fatalf("lookup f%d: %+v %v", i, a, err)
		}
		if n, err := s.Read(a.Ino, 0, buf); err != nil || n != len(buf) || buf[0] != byte(i) {
			t.Fatalf("read f%d: %d %v", i, n, err)
		}
	}
	for round := 0; hot+round*burst < files; round++ {
		for i := range hot {
			use(i)
		}
		for i := hot + round*burst; i < min(files, hot+(round+1)*burst); i++ {
			use(i)
		}
		checkBudget(t, s)
	}
	cs, ns := s.CacheStats(), s.e.CacheStats()
	t.Logf("%+v; node evictions %d", cs, ns.Evictions)
	if cs.InodeEvictions == 0 || cs.Evictions == 0 || ns.Evictions == 0 {
		t.Fatalf("evicted %d inodes, %d pages, %d nodes: want every kind evicted", cs.InodeEvictions, cs.Evictions, ns.Evictions)
	}
	reads := cd.reads.Load()
	for i := range hot {
		if s.itab.peek(inos[i]) == nil {
			t.Errorf("hot file f%d: its inode was evicted", i)
		}
		if _, err := s.Read(inos[i], 0, buf); err != nil {
			t.Fatal(err)
		}
	}
	if got := cd.reads.Load() - reads; got != 0 {
		t.Errorf("reading the hot files again: %d device reads, want 0 (their blocks stayed)", got)
	}
	closeCheck(t, s)
}
