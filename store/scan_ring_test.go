package store

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"ustore/dev"
)

// scanOpts is a store whose cache makes a file of 4 MiB or more a scan
// (a quarter of 16 MiB).
func scanOpts() Options { return quiet(Options{CacheBytes: 16 << 20}) }

// scanFile makes a file of chunks chunks of read-ahead, durable, and
// remounts with opts so that nothing of it is cached.
func scanFile(t *testing.T, d dev.Device, chunks int, opts Options) (*Store, Ino, []byte) {
	t.Helper()
	s := openTest(t, d, opts)
	data := patternData(9, chunks*readAheadChunkBlocks*blockSize)
	ino := mustCreate(t, s, RootIno, "big", data)
	if err := s.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	return remount(t, s, d, opts), ino, data
}

// readChunk reads chunk k of ino (1 MiB) with Read, or ReadCached first
// when cached, and checks it against data.
func readChunk(t *testing.T, s *Store, ino Ino, data []byte, k int, cached bool) {
	t.Helper()
	cb := readAheadChunkBlocks * blockSize
	buf := make([]byte, cb)
	n, ok := 0, false
	if cached {
		n, ok = s.ReadCached(ino, uint64(k*cb), buf)
	}
	if !ok {
		var err error
		if n, err = s.Read(ino, uint64(k*cb), buf); err != nil {
			t.Fatalf("chunk %d: %v", k, err)
		}
	}
	want := data[k*cb : min((k+1)*cb, len(data))]
	if n != len(want) || !bytes.Equal(buf[:n], want) {
		t.Fatalf("chunk %d: %d bytes, or not the file's", k, n)
	}
}

// TestScanRing_Scan_NotCached: a sequential reader of a file four times
// the cache's share for a scan reads every block once — the run's first
// read on demand, the rest ahead into the ring, from which the reads
// take them — caches none of them, holds no more than the ring's
// buffers, and leaves none held once it has read them all. A small file
// read the same way, and a random read of the large one, are cached as
// before.
func TestScanRing_Scan_NotCached(t *testing.T) {
	const chunks = 16
	d := newTestDevice(t, 128<<20)
	opts := scanOpts()
	s, ino, data := scanFile(t, d, chunks, opts)
	before := s.CacheStats()
	for k := range chunks {
		readChunk(t, s, ino, data, k, k%2 == 1)
		if cs := s.CacheStats(); cs.ScanBuffers > scanRingChunks {
			t.Fatalf("after chunk %d: %d scan buffers held, the ring has %d", k, cs.ScanBuffers, scanRingChunks)
		}
	}
	waitChunks(t, s, 0)
	cs := s.CacheStats()
	blocks := uint64(chunks * readAheadChunkBlocks)
	if got := cs.PageMisses - before.PageMisses + cs.ReadAheadBlocks - before.ReadAheadBlocks; got != blocks {
		t.Fatalf("%+v: %d blocks from the device, want the file's %d once each", cs, got, blocks)
	}
	if got := cs.ScanBlocks; got != blocks-readAheadChunkBlocks {
		t.Fatalf("%+v: %d blocks from the ring, want all but the first read's: %d", cs, got, blocks-readAheadChunkBlocks)
	}
	if cs.Pages != before.Pages {
		t.Fatalf("%+v: the scan cached %d blocks, want none", cs, cs.Pages-before.Pages)
	}
	if cs.ScanReady != 0 || cs.ScanBuffers != 0 {
		t.Fatalf("%+v: chunks held after every block was read", cs)
	}
	if cs.CachedReads == 0 {
		t.Fatalf("%+v: ReadCached served no read from the ring", cs)
	}

	// A file under the scan size is cached when read front to back;
	// so is a random read of the large file.
	small := patternData(3, 2*readAheadChunkBlocks*blockSize)
	sino := mustCreate(t, s, RootIno, "small", small)
	if err := s.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	s = remount(t, s, d, opts)
	for k := range 2 {
		readChunk(t, s, sino, small, k, false)
	}
	waitChunks(t, s, 0)
	if cs := s.CacheStats(); cs.ScanBlocks != 0 || cs.Pages < 2*readAheadChunkBlocks {
		t.Fatalf("%+v: the small file read front to back is not cached", cs)
	}
	b := make([]byte, blockSize)
	pages := s.CacheStats().Pages
	if _, err := s.Read(ino, 1000*blockSize, b); err != nil || !bytes.Equal(b, data[1000*blockSize:1001*blockSize]) {
		t.Fatalf("random read of the large file: %v, or wrong bytes", err)
	}
	if cs := s.CacheStats(); cs.Pages != pages+1 {
		t.Fatalf("%+v: a random read of the large file cached %d blocks, want 1", cs, cs.Pages-pages)
	}
	checkBudget(t, s)
	closeCheck(t, s)
}

// TestScanRing_Write_DropsChunks: a chunk ready in the ring is never read
// after a write, truncate or punch of its file has returned — not even
// once the write is written back and its cached page evicted, which
// leaves the device's new bytes and the chunk's old ones — and the write
// gives the chunk's buffer back.
func TestScanRing_Write_DropsChunks(t *testing.T) {
	for _, change := range []string{"write", "truncate", "punch"} {
		t.Run(change, func(t *testing.T) {
			const chunks = 8
			d := newTestDevice(t, 128<<20)
			s, ino, data := scanFile(t, d, chunks, scanOpts())
			readChunk(t, s, ino, data, 0, false)
			readChunk(t, s, ino, data, 1, false)
			waitChunks(t, s, 0)
			if cs := s.CacheStats(); cs.ScanReady == 0 {
				t.Fatalf("%+v: no chunk ready in the ring", cs)
			}
			// Chunk 2 is in the ring. Change a block of it.
			b := uint64(2*readAheadChunkBlocks + 5)
			want := append([]byte(nil), data...)
			switch change {
			case "write":
				nb := blockVersion(b, 77)
				if _, err := s.Write(ino, b*blockSize, nb); err != nil {
					t.Fatal(err)
				}
				copy(want[b*blockSize:], nb)
			case "truncate": // shrink into the block, then grow back
				cut := b*blockSize + 100
				if err := s.Truncate(ino, cut); err != nil {
					t.Fatal(err)
				}
				if err := s.Truncate(ino, uint64(len(data))); err != nil {
					t.Fatal(err)
				}
				clear(want[cut:])
			case "punch":
				if _, err := s.Fallocate(ino, FallocPunchHole|FallocKeepSize, int64(b*blockSize), blockSize); err != nil {
					t.Fatal(err)
				}
				clear(want[b*blockSize : (b+1)*blockSize])
			}
			if cs := s.CacheStats(); cs.ScanReady != 0 || cs.ScanBuffers != 0 {
				t.Fatalf("%+v: the %s left the file's chunks in the ring", cs, change)
			}
			if err := s.Sync(t.Context()); err != nil {
				t.Fatal(err)
			}
			s.pc.c.Clear() // the written-back page goes: the device has the bytes
			for k := 2; k < chunks; k++ {
				readChunk(t, s, ino, want, k, k%2 == 0)
			}
			closeCheck(t, s)
		})
	}
}

// TestScanRing_Reclaim: scans left half read keep their chunks in the
// ring until another scan needs buffers: with the ring full of them, the
// new scan takes the oldest (ScanReclaims) and reads from the ring, not
// on demand; the ring never holds more than its buffers, and the scans
// left behind go on from where they were.
func TestScanRing_Reclaim(t *testing.T) {
	const (
		chunks = 12
		left   = scanRingChunks / scanWindowChunks // scans whose windows fill the ring
	)
	d := newTestDevice(t, 256<<20)
	opts := scanOpts()
	s := openTest(t, d, opts)
	var inos []Ino
	var datas [][]byte
	for i := range left + 1 {
		data := patternData(byte(20+i), chunks*readAheadChunkBlocks*blockSize)
		inos = append(inos, mustCreate(t, s, RootIno, fmt.Sprintf("f%d", i), data))
		datas = append(datas, data)
	}
	if err := s.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	s = remount(t, s, d, opts)
	for i := range left {
		for k := range 4 {
			readChunk(t, s, inos[i], datas[i], k, false)
		}
	}
	waitChunks(t, s, 0)
	if cs := s.CacheStats(); cs.ScanReady != scanRingChunks {
		t.Fatalf("%+v: %d chunks ready, want the windows' %d: the whole ring", cs, cs.ScanReady, scanRingChunks)
	}
	miss := s.CacheStats().PageMisses
	for k := range chunks {
		readChunk(t, s, inos[left], datas[left], k, false)
		if cs := s.CacheStats(); cs.ScanBuffers > scanRingChunks {
			t.Fatalf("%d scan buffers held, the ring has %d", cs.ScanBuffers, scanRingChunks)
		}
	}
	waitChunks(t, s, 0)
	cs := s.CacheStats()
	if cs.ScanReclaims == 0 {
		t.Fatalf("%+v: the new scan took no chunk of those left", cs)
	}
	if got := cs.PageMisses - miss; got != readAheadChunkBlocks {
		t.Fatalf("%+v: the new scan read %d blocks on demand, want only its first read's %d", cs, got, readAheadChunkBlocks)
	}
	for i := range left {
		for k := 4; k < chunks; k++ {
			readChunk(t, s, inos[i], datas[i], k, true)
		}
	}
	checkBudget(t, s)
	closeCheck(t, s)
}

// TestScanRing_Concurrent_Pipeline: several scans at once, each with
// eight 1 MiB reads in flight (the client's Reader), get their files'
// bytes while they share the ring, which never holds more than its
// buffers; the files' inodes leaving memory give every chunk back.
func TestScanRing_Concurrent_Pipeline(t *testing.T) {
	const (
		files  = 4
		chunks = 12
	)
	d := newTestDevice(t, 256<<20)
	opts := scanOpts()
	s := openTest(t, d, opts)
	var inos []Ino
	var datas [][]byte
	for i := range files {
		data := patternData(byte(40+i), chunks*readAheadChunkBlocks*blockSize)
		inos = append(inos, mustCreate(t, s, RootIno, fmt.Sprintf("f%d", i), data))
		datas = append(datas, data)
	}
	if err := s.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	s = remount(t, s, d, opts)
	cb := readAheadChunkBlocks * blockSize
	var wg sync.WaitGroup
	errs := make(chan error, files*8)
	for f := range files {
		next := make(chan int, 8)
		go func() {
			for k := range chunks {
				next <- k
			}
			close(next)
		}()
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				buf := make([]byte, cb)
				for k := range next {
					n, ok := s.ReadCached(inos[f], uint64(k*cb), buf)
					var err error
					if !ok {
						n, err = s.Read(inos[f], uint64(k*cb), buf)
					}
					if err == nil && (n != cb || !bytes.Equal(buf, datas[f][k*cb:(k+1)*cb])) {
						err = fmt.Errorf("file %d chunk %d: %d bytes or wrong bytes", f, k, n)
					}
					if held := s.CacheStats().ScanBuffers; err == nil && held > scanRingChunks {
						err = fmt.Errorf("%d scan buffers held, the ring has %d", held, scanRingChunks)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	waitChunks(t, s, 0)
	cs := s.CacheStats()
	if cs.ScanBlocks == 0 {
		t.Fatalf("%+v: no block read from the ring", cs)
	}
	// A read that overtook its run reads on demand; a chunk of the
	// next run may then be left with blocks no reader wants: the ring
	// holds it until it is taken, or its inode goes.
	evictInodes(s)
	if cs := s.CacheStats(); cs.ScanReady != 0 || cs.ScanBuffers != 0 {
		t.Fatalf("%+v: chunks held after their inodes left memory", cs)
	}
	checkBudget(t, s)
	closeCheck(t, s)
}

// TestScanRing_Concurrent_NeverStale is TestPageCache_Concurrent_NeverStale
// with sequential readers whose files are scans: chunks in the ring meet
// the writers' overwrites, truncates and renames, and no read may see a
// block older than the last acknowledged write.
func TestScanRing_Concurrent_NeverStale(t *testing.T) {
	neverStaleRun(t, neverStale{seq: true, cached: true, scan: true})
}
