package store

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestWritebackStaging_Capacity(t *testing.T) {
	for _, c := range []struct {
		dirty int64
		want  int
	}{
		{1 << 20, 1}, {8 << 20, 1}, {16 << 20, 2}, {24 << 20, 3}, {256 << 20, wbStagingMax},
	} {
		if got := wbStagingCapacity(c.dirty); got != c.want {
			t.Errorf("dirty budget %d MiB: %d staging buffers, want %d", c.dirty>>20, got, c.want)
		}
	}
}

// Never more buffers taken than the capacity, however many take them at
// once, and never more made.
func TestWritebackStaging_NeverPastCapacity(t *testing.T) {
	const capacity, takers, rounds = 3, 12, 50
	var set wbStagingSet
	set.init(capacity)
	var taken, most atomic.Int64
	var wg sync.WaitGroup
	for range takers {
		wg.Go(func() {
			for range rounds {
				b := set.get()
				n := taken.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				(*b)[0]++ // the buffer is the taker's alone until put
				runtime.Gosched()
				taken.Add(-1)
				set.put(b)
			}
		})
	}
	wg.Wait()
	if most.Load() > capacity {
		t.Errorf("%d buffers taken at once, capacity %d", most.Load(), capacity)
	}
	if set.madeCount() > capacity {
		t.Errorf("%d buffers made, capacity %d", set.madeCount(), capacity)
	}
}

// The buffers outlive collections: after two (a sync.Pool's primary cache
// and its victim both gone), get returns the buffers made before, and
// makes none.
func TestWritebackStaging_KeptAcrossGC(t *testing.T) {
	var set wbStagingSet
	set.init(2)
	a, b := set.get(), set.get()
	set.put(a)
	set.put(b)
	runtime.GC()
	runtime.GC()
	c, d := set.get(), set.get()
	if set.madeCount() != 2 {
		t.Errorf("%d buffers made, want 2", set.madeCount())
	}
	if !(c == a && d == b || c == b && d == a) {
		t.Errorf("after collections the set gave other buffers than it made")
	}
	set.put(c)
	set.put(d)
}

// A get with every buffer taken waits for a put, and takes that buffer.
func TestWritebackStaging_WaitsForPut(t *testing.T) {
	var set wbStagingSet
	set.init(1)
	a := set.get()
	got := make(chan *[]byte)
	go func() { got <- set.get() }()
	select {
	case <-got:
		t.Fatal("get returned with the only buffer taken")
	case <-time.After(20 * time.Millisecond):
	}
	set.put(a)
	select {
	case b := <-got:
		if b != a {
			t.Error("the waiting get did not take the buffer put back")
		}
		set.put(b)
	case <-time.After(10 * time.Second):
		t.Fatal("get still waits after a put")
	}
}

// Writebacks at once through one staging buffer make progress: fsyncs of
// several files, each past a writeback batch (a pipeline, whose prepare
// side waits for the buffer its write side holds), with the flusher
// writing back as well, all end, and the data is what was written.
func TestWritebackStaging_ConcurrentWritebacksProgress(t *testing.T) {
	const files, size, chunk = 4, 3*wbChunkBytes + 5*blockSize, 1 << 20
	d := newTestDevice(t, 256<<20)
	s := openTest(t, d, Options{DirtyBytes: 64 << 20, DirtyBackgroundBytes: 48 << 20})
	// One buffer whatever the budget: the least a writeback must be able
	// to proceed with.
	s.wbStaging.init(1)
	pattern := func(f int, off int) []byte {
		b := make([]byte, chunk)
		for i := range b {
			b[i] = byte(f*31 + (off+i)/blockSize)
		}
		return b
	}
	inos := make([]Ino, files)
	for f := range files {
		a, err := s.Create(RootIno, fmt.Sprintf("f%d", f), 0o644)
		if err != nil {
			t.Fatal(err)
		}
		inos[f] = a.Ino
	}
	done := make(chan error, files)
	for f := range files {
		go func() {
			for round := range 2 {
				for off := 0; off < size; off += chunk {
					b := pattern(f+round, off)[:min(chunk, size-off)]
					if _, err := s.Write(inos[f], uint64(off), b); err != nil {
						done <- err
						return
					}
				}
				if err := s.Fsync(context.Background(), inos[f], false); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	deadline := time.After(60 * time.Second)
	for range files {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-deadline:
			t.Fatal("writebacks through one staging buffer did not end: a deadlock")
		}
	}
	if s.wbStaging.madeCount() != 1 {
		t.Errorf("%d staging buffers made, capacity 1", s.wbStaging.madeCount())
	}
	for f := range files {
		for off := 0; off < size; off += chunk {
			want := pattern(f+1, off)[:min(chunk, size-off)]
			got := make([]byte, len(want))
			if n, err := s.Read(inos[f], uint64(off), got); err != nil || n != len(got) || !bytes.Equal(got, want) {
				t.Fatalf("file %d at %d: %d %v, or other bytes", f, off, n, err)
			}
		}
	}
	closeCheck(t, s)
}

// TestWritebackStaging_SmallBatchesTakeNoSetBuffer: batches of at most
// wbSmallStagingBytes (an fsync's few 4 KiB blocks) do not take the set's
// buffers, so concurrent small writebacks never wait for each other's:
// with every buffer of the set taken, a small take still returns.
func TestWritebackStaging_SmallBatchesTakeNoSetBuffer(t *testing.T) {
	var set wbStagingSet
	set.init(1)
	big := set.take(wbSmallStagingBytes + 1)
	got := make(chan *[]byte, 1)
	go func() { got <- set.take(4 * blockSize) }()
	select {
	case small := <-got:
		if len(*small) != wbSmallStagingBytes {
			t.Fatalf("a small batch's buffer of %d bytes, want %d", len(*small), wbSmallStagingBytes)
		}
		set.give(small)
	case <-time.After(waitLimit):
		t.Fatal("a small batch waited for the set's only buffer")
	}
	if set.madeCount() != 1 {
		t.Fatalf("the set made %d buffers, want 1", set.madeCount())
	}
	set.give(big)
	if b := set.take(wbChunkBytes); len(*b) != wbChunkBytes {
		t.Fatalf("a large batch's buffer of %d bytes", len(*b))
	}
}
