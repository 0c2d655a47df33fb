package dev

import (
	"sync"
	"unsafe"

	"ustore/internal/assert"
)

// IsAligned reports whether b starts on a SectorSize boundary.
func IsAligned(b []byte) bool {
	if len(b) == 0 {
		return true
	}
	return uintptr(unsafe.Pointer(&b[0]))%SectorSize == 0
}

// AlignedBuffer returns n bytes of zeroed, SectorSize-aligned Go memory.
// The Go heap does not promise 4096-byte alignment, but gives it to the
// sizes a node or a block has: a multiple of 4096 bytes is a size class of
// its own below 32 KiB (its spans start on 8 KiB pages) and page-aligned
// above, so a plain allocation is tried first. Where it is not aligned we
// over-allocate and slice (the slice keeps the whole allocation alive):
// a 16 KiB node that way would take the 18 KiB size class, 12.5 % more
// memory than the cache budget counts for it.
func AlignedBuffer(n int) []byte {
	if n%SectorSize == 0 {
		if b := make([]byte, n); IsAligned(b) {
			return b
		}
	}
	b := make([]byte, n+SectorSize)
	skip := 0
	if r := uintptr(unsafe.Pointer(&b[0])) % SectorSize; r != 0 {
		skip = int(SectorSize - r)
	}
	return b[skip : skip+n : skip+n]
}

// BufferPool hands out aligned buffers of one size (BufferSize) from a fixed
// region — for uringdev, memory registered with the ring — and, when the region
// is exhausted, from the Go heap so that a caller never waits on the pool.
// The region is bounded; heap buffers are garbage collected, so the pool never
// grows.
type BufferPool struct {
	size   int
	mu     sync.Mutex
	free   [][]byte // free slabs of the region; never more than the region holds
	region []byte
}

// NewBufferPool carves region (4096-aligned, a multiple of size) into slabs
// of size bytes. A nil region gives a pool that always allocates.
func NewBufferPool(region []byte, size int) *BufferPool {
	if !(size > 0 && size%SectorSize == 0) {
		assert.Failf("dev: buffer size %d is not a positive multiple of SectorSize", size)
	}
	p := &BufferPool{size: size, region: region}
	for off := 0; off+size <= len(region); off += size {
		p.free = append(p.free, region[off:off+size:off+size])
	}
	return p
}

// BufferSize is the length of every buffer Get returns.
func (p *BufferPool) BufferSize() int { return p.size }

// Get returns a buffer of BufferSize bytes. Its content is undefined.
func (p *BufferPool) Get() []byte {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		b := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return b
	}
	p.mu.Unlock()
	return AlignedBuffer(p.size)
}

// Put returns a buffer obtained from Get, whole (not re-sliced). Heap
// buffers are dropped.
func (p *BufferPool) Put(b []byte) {
	if !p.inRegion(b) {
		return
	}
	p.mu.Lock()
	p.free = append(p.free, b[:p.size:p.size])
	p.mu.Unlock()
}

// inRegion reports whether b lies in the pool's fixed region.
func (p *BufferPool) inRegion(b []byte) bool {
	if len(b) == 0 || len(p.region) == 0 {
		return false
	}
	start := uintptr(unsafe.Pointer(&p.region[0]))
	addr := uintptr(unsafe.Pointer(&b[0]))
	return addr >= start && addr+uintptr(len(b)) <= start+uintptr(len(p.region))
}
