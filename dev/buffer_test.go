package dev

import (
	"runtime"
	"testing"
)

// TestAlignedBuffer_AlignedZeroedExact: every size comes back aligned,
// zeroed, of length and capacity n.
func TestAlignedBuffer_AlignedZeroedExact(t *testing.T) {
	for _, n := range []int{1, 100, 4095, 4096, 8192, 12288, 16384, 65536, 1 << 20} {
		for range 50 {
			b := AlignedBuffer(n)
			if len(b) != n || cap(b) != n || !IsAligned(b) {
				t.Fatalf("AlignedBuffer(%d): len %d cap %d aligned %v", n, len(b), cap(b), IsAligned(b))
			}
			for i, c := range b {
				if c != 0 {
					t.Fatalf("AlignedBuffer(%d): byte %d is %d", n, i, c)
				}
			}
		}
	}
}

// TestAlignedBuffer_NodeTakesItsOwnSize: a 16 KiB node's buffer costs the
// heap 16 KiB, not the next size class up that an over-allocation for
// alignment lands in (18 KiB): the cache budget counts the node's size.
func TestAlignedBuffer_NodeTakesItsOwnSize(t *testing.T) {
	const n, count = 16384, 1000
	keep := make([][]byte, 0, count)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range count {
		keep = append(keep, AlignedBuffer(n))
	}
	runtime.ReadMemStats(&after)
	per := (after.TotalAlloc - before.TotalAlloc) / count
	if per > n+n/32 {
		t.Fatalf("a %d-byte buffer took %d bytes of heap", n, per)
	}
	runtime.KeepAlive(keep)
}
