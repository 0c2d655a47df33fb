package store

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ustore/dev"
)

// holdDev holds every data submission (more than 64 KiB in all: tree
// node reads go by) while holding is set, until the test releases it:
// what read-ahead has in flight is then exactly what the test let go.
type holdDev struct {
	dev.Device
	holding atomic.Bool
	arrived chan *heldRead
}

// heldRead is one held submission: its IOs, and release to let it go.
type heldRead struct {
	ios     int
	release chan struct{}
}

func newHoldDev(d dev.Device) *holdDev {
	return &holdDev{Device: d, arrived: make(chan *heldRead, readAheadInflightMax)}
}

func (d *holdDev) Read(ios []dev.IO) error {
	n := 0
	for _, io := range ios {
		n += len(io.Buf)
	}
	if n > 64<<10 && d.holding.Load() {
		h := &heldRead{ios: len(ios), release: make(chan struct{})}
		d.arrived <- h
		<-h.release
	}
	return d.Device.Read(ios)
}

// next returns the next held submission.
func (d *holdDev) next(t *testing.T) *heldRead {
	t.Helper()
	select {
	case h := <-d.arrived:
		return h
	case <-time.After(10 * time.Second):
		t.Fatal("no submission of read-ahead reached the device")
		return nil
	}
}

// waitChunks waits until the store has n chunks of read-ahead in flight:
// the background reads released have cached their blocks.
func waitChunks(t *testing.T, s *Store, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.CacheStats().ReadAheadChunks != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d chunks of read-ahead in flight, want %d", s.CacheStats().ReadAheadChunks, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// seqFile makes a file of chunks chunks of read-ahead, durable, and
// remounts so that nothing of it is cached.
func seqFile(t *testing.T, d dev.Device, chunks int) (*Store, Ino, []byte) {
	t.Helper()
	s := openTest(t, d, quiet(Options{}))
	data := patternData(7, chunks*readAheadChunkBlocks*blockSize)
	ino := mustCreate(t, s, RootIno, "f", data)
	if err := s.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	return remount(t, s, d, quiet(Options{})), ino, data
}

// TestReadAhead_Window_QInFlight: a sequential reader of 1 MiB reads
// carries one chunk of read-ahead in its first read's own submission,
// then doubles the chunks it keeps ahead with each read — each top-up
// one submission of all its chunks, in the background — up to
// readAheadChunksMax in flight and no more; and every block of the file
// comes from the device once. The device holds each submission until
// the test lets it go, so the counts do not depend on timing.
func TestReadAhead_Window_QInFlight(t *testing.T) {
	const chunks = 24
	hd := newHoldDev(newTestDevice(t, 128<<20))
	s, ino, data := seqFile(t, hd, chunks)
	chunkBytes := readAheadChunkBlocks * blockSize
	buf := make([]byte, chunkBytes)
	read := func(k int) {
		t.Helper()
		n, err := s.Read(ino, uint64(k*chunkBytes), buf)
		if err != nil || n != chunkBytes || !bytes.Equal(buf, data[k*chunkBytes:(k+1)*chunkBytes]) {
			t.Fatalf("read of chunk %d: n %d, err %v, or wrong bytes", k, n, err)
		}
	}
	inflight := func(want int64, when string) {
		t.Helper()
		if got := s.CacheStats().ReadAheadChunks; got != want {
			t.Fatalf("%s: %d chunks of read-ahead in flight, want %d", when, got, want)
		}
	}
	subs := s.CacheStats().ReadSubmissions
	read(0)
	if got := s.CacheStats().ReadSubmissions - subs; got != 1 {
		t.Fatalf("first read: %d submissions, want 1 (its blocks and a chunk ahead)", got)
	}
	inflight(0, "after the first read")

	hd.holding.Store(true)
	// Each read below finds its blocks cached and tops the window up:
	// 2 chunks ahead of chunk 1 (2, 3), then 4 ahead of chunk 2 (4–6),
	// then still 4 ahead of chunk 3 (7): 3 + 1 in flight, the most.
	steps := []struct {
		read     int
		chunks   int   // in the submission the read makes
		inflight int64 // after it
		release  bool  // let everything held go, and wait for it, after it
	}{
		{read: 1, chunks: 2, inflight: 2, release: true},
		{read: 2, chunks: 3, inflight: 3},
		{read: 3, chunks: 1, inflight: readAheadChunksMax},
	}
	var held []*heldRead
	for _, st := range steps {
		read(st.read)
		h := hd.next(t)
		if h.ios < st.chunks {
			t.Fatalf("read of chunk %d: a submission of %d IOs, want its %d chunks in one", st.read, h.ios, st.chunks)
		}
		held = append(held, h)
		inflight(st.inflight, fmt.Sprintf("after the read of chunk %d", st.read))
		if st.release {
			for _, h := range held {
				close(h.release)
			}
			held = nil
			waitChunks(t, s, 0)
		}
	}
	if readAheadChunksMax != 4 {
		t.Fatalf("the steps above assume 4 chunks ahead, not %d", readAheadChunksMax)
	}
	hd.holding.Store(false)
	for _, h := range held {
		close(h.release)
	}
	waitChunks(t, s, 0)
	for k := 4; k < chunks; k++ {
		read(k)
	}
	waitChunks(t, s, 0)
	cs := s.CacheStats()
	if got := cs.PageMisses + cs.ReadAheadBlocks; got != chunks*readAheadChunkBlocks {
		t.Fatalf("%d blocks read from the device (%d on demand, %d ahead), want the file's %d once each",
			got, cs.PageMisses, cs.ReadAheadBlocks, chunks*readAheadChunkBlocks)
	}
	if cs.PageMisses != readAheadChunkBlocks {
		t.Fatalf("%d blocks read on demand, want only the first read's %d", cs.PageMisses, readAheadChunkBlocks)
	}
	checkBudget(t, s)
	closeCheck(t, s)
}

// TestReadAhead_Wait_NoSecondRead: a read whose blocks are in a chunk of
// read-ahead in flight waits for that chunk instead of reading them
// again, and then finds them cached.
func TestReadAhead_Wait_NoSecondRead(t *testing.T) {
	hd := newHoldDev(newTestDevice(t, 64<<20))
	s, ino, data := seqFile(t, hd, 4)
	chunkBytes := readAheadChunkBlocks * blockSize
	buf := make([]byte, chunkBytes)
	for k := range 2 {
		if _, err := s.Read(ino, uint64(k*chunkBytes), buf); err != nil {
			t.Fatal(err)
		}
		hd.holding.Store(true)
	}
	h := hd.next(t) // chunks 2 and 3, held
	got := make(chan error, 1)
	go func() {
		b := make([]byte, chunkBytes)
		_, err := s.Read(ino, uint64(2*chunkBytes), b)
		if err == nil && !bytes.Equal(b, data[2*chunkBytes:3*chunkBytes]) {
			err = fmt.Errorf("wrong bytes")
		}
		got <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for s.CacheStats().ReadAheadWaits == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the read did not wait for the chunk in flight")
		}
		time.Sleep(time.Millisecond)
	}
	misses := s.CacheStats().PageMisses
	close(h.release)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	hd.holding.Store(false)
	waitChunks(t, s, 0)
	if cs := s.CacheStats(); cs.PageMisses != misses {
		t.Fatalf("the read that waited missed %d blocks after the wait, want 0", cs.PageMisses-misses)
	}
	closeCheck(t, s)
}

// TestReadAhead_Concurrent_Pipeline: readers of one file with several
// 1 MiB reads in flight each, as the client's Reader sends them, get the
// file's bytes; read-ahead ends with nothing in flight and the budget
// exact.
func TestReadAhead_Concurrent_Pipeline(t *testing.T) {
	const chunks = 32
	d := newTestDevice(t, 128<<20)
	s, ino, data := seqFile(t, d, chunks)
	chunkBytes := readAheadChunkBlocks * blockSize
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for r := range 2 {
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
				buf := make([]byte, chunkBytes)
				for k := range next {
					n, err := s.Read(ino, uint64(k*chunkBytes), buf)
					if err == nil && (n != chunkBytes || !bytes.Equal(buf, data[k*chunkBytes:(k+1)*chunkBytes])) {
						err = fmt.Errorf("reader %d: chunk %d: %d bytes or wrong bytes", r, k, n)
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
	if cs := s.CacheStats(); cs.ReadAheadBlocks == 0 {
		t.Fatalf("%+v: no read-ahead", cs)
	}
	checkBudget(t, s)
	closeCheck(t, s)
}

// TestReadAhead_NewRun_SkipsChunksInFlight: a run that ends (a read
// elsewhere) while its chunks are in flight, followed by a new run over
// them, issues no chunk for the blocks still being read: it waits for
// them like any read.
func TestReadAhead_NewRun_SkipsChunksInFlight(t *testing.T) {
	hd := newHoldDev(newTestDevice(t, 128<<20))
	s, ino, data := seqFile(t, hd, 24)
	chunkBytes := readAheadChunkBlocks * blockSize
	buf := make([]byte, chunkBytes)
	if _, err := s.Read(ino, 0, buf); err != nil { // chunk 0, and 1 carried
		t.Fatal(err)
	}
	hd.holding.Store(true)
	if _, err := s.Read(ino, uint64(chunkBytes), buf); err != nil { // chunks 2 and 3 ahead, held
		t.Fatal(err)
	}
	h := hd.next(t)
	small := make([]byte, blockSize)
	// Far away (the run ends), then back to cached block 400 (another
	// run's first read), then 401: the new run's window reaches into
	// chunk 2, in flight.
	for _, b := range []uint64{5000, 400, 401} {
		if _, err := s.Read(ino, b*blockSize, small); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(small, data[b*blockSize:(b+1)*blockSize]) {
			t.Fatalf("block %d: wrong bytes", b)
		}
	}
	if got := s.CacheStats().ReadAheadChunks; got != 2 {
		t.Fatalf("%d chunks of read-ahead in flight, want the first run's 2: a new chunk was issued over them", got)
	}
	close(h.release)
	hd.holding.Store(false)
	waitChunks(t, s, 0)
	closeCheck(t, s)
}

// TestReadAhead_Overtaken_GapReadAhead: a pipelined read that takes the
// lock before the reads it follows — past what read-ahead issued — stays
// in the run: it reads its own blocks on demand, read-ahead issues the
// blocks of the reads it overtook (and the window past it), and those
// reads, coming after, find them; every block comes from the device once
// and the run goes on (the file is a scan: nothing is cached).
func TestReadAhead_Overtaken_GapReadAhead(t *testing.T) {
	const chunks = 24
	d := newTestDevice(t, 128<<20)
	s, ino, data := scanFile(t, d, chunks, scanOpts())
	readChunk(t, s, ino, data, 0, false) // on demand; chunks 1 and 2 ahead (a scan's window)
	waitChunks(t, s, 0)
	readChunk(t, s, ino, data, 5, false) // overtakes 1–4: 3 and 4 (the gap), 6–9 ahead
	if cs := s.CacheStats(); cs.ReadAheadBlocks != 8*readAheadChunkBlocks {
		t.Fatalf("%+v: %d blocks read ahead after the overtaking read, want chunks 1–4 and 6–9", cs, cs.ReadAheadBlocks)
	}
	waitChunks(t, s, 0)
	for k := 1; k < chunks; k++ {
		if k != 5 {
			readChunk(t, s, ino, data, k, k%2 == 0)
		}
	}
	waitChunks(t, s, 0)
	cs := s.CacheStats()
	if cs.PageMisses != 2*readAheadChunkBlocks {
		t.Fatalf("%+v: %d blocks read on demand, want the first read's and the overtaking one's: %d", cs, cs.PageMisses, 2*readAheadChunkBlocks)
	}
	if got := cs.PageMisses + cs.ReadAheadBlocks; got != chunks*readAheadChunkBlocks {
		t.Fatalf("%+v: %d blocks from the device, want the file's %d once each", cs, got, chunks*readAheadChunkBlocks)
	}
	if cs.Pages != 0 || cs.ScanBuffers != 0 {
		t.Fatalf("%+v: the scan cached blocks or holds chunks after it read them all", cs)
	}
	closeCheck(t, s)
}
