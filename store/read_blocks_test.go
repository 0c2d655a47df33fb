package store

import (
	"runtime"
	"testing"
)

// The read staging buffers outlive collections, and the store keeps no
// more than readStagingKept of them: the rest go to the collector.
func TestReadStaging_KeptAcrossGC(t *testing.T) {
	var set readStagingSet
	set.init()
	const n = readStagingKept + 3
	var taken []*[]byte
	made := map[*[]byte]bool{}
	for range n {
		buf, b := set.get(readPieceBlocksMax * blockSize)
		if len(buf) != readPieceBlocksMax*blockSize || b == nil {
			t.Fatalf("a %d-byte buffer, kept %v", len(buf), b != nil)
		}
		taken = append(taken, b)
		made[b] = true
	}
	for _, b := range taken {
		set.put(b)
	}
	if len(set.free) != readStagingKept {
		t.Errorf("%d buffers kept, want %d", len(set.free), readStagingKept)
	}
	runtime.GC()
	runtime.GC()
	for range readStagingKept {
		buf, b := set.get(100 << 10)
		if !made[b] {
			t.Fatal("after collections a read took a new buffer while the store kept some")
		}
		if len(buf) != 100<<10 || len(*b) != readPieceBlocksMax*blockSize {
			t.Fatalf("a %d-byte read from a %d-byte buffer", len(buf), len(*b))
		}
		set.put(b)
	}
	// Small reads take buffers of their own, never kept.
	if buf, b := set.get(64 << 10); b != nil || len(buf) != 64<<10 {
		t.Errorf("a 64 KiB read: %d bytes, from the set %v", len(buf), b != nil)
	}
}
