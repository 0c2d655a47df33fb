package memdev

import (
	"maps"

	"ustore/dev"

	"ustore/internal/assert"
)

// image is a sparse array of sectors: sector index → dev.SectorSize bytes. A
// sector missing from the map reads as zeros, so a 1 GiB device costs only
// what was written to it.
//
// Stored sectors are immutable (Invariant 1): write stores slices of the
// caller's private copy of the data, capped so that nothing can append into a
// neighbour; writeTorn stores fresh sectors; nothing writes into a stored
// slice. So clone copies only the map, and images share sectors freely.
type image map[int64][]byte

// read copies [off, off+len(b)) into b. Both are sector-aligned.
func (m image) read(off int64, b []byte) {
	for i := 0; i < len(b); i += dev.SectorSize {
		dst := b[i : i+dev.SectorSize]
		if s, ok := m[(off+int64(i))/dev.SectorSize]; ok {
			copy(dst, s)
		} else {
			clear(dst)
		}
	}
}

// write stores data at off. data becomes part of the image: the caller hands
// over a private copy and never modifies it again.
func (m image) write(off int64, data []byte) {
	if !(off%dev.SectorSize == 0 && len(data)%dev.SectorSize == 0) {
		assert.Failf("memdev: image write of %d bytes at %d not sector-aligned", len(data), off)
	}
	for i := 0; i < len(data); i += dev.SectorSize {
		m[(off+int64(i))/dev.SectorSize] = data[i : i+dev.SectorSize : i+dev.SectorSize]
	}
}

// writeTorn stores only the dev.TornSize pieces of data that persist: piece j
// (bytes [j*TornSize, (j+1)*TornSize) of data) persists iff j < len(persist)
// and persist[j]. Every other byte keeps its old value, so a piece is all old
// or all new and nothing outside [off, off+len(data)) changes (Invariant 5).
func (m image) writeTorn(off int64, data []byte, persist []bool) {
	if !(off%dev.SectorSize == 0 && len(data)%dev.SectorSize == 0) {
		assert.Failf("memdev: torn write of %d bytes at %d not sector-aligned", len(data), off)
	}
	const piecesPerSector = dev.SectorSize / dev.TornSize
	for i := 0; i < len(data); i += dev.SectorSize {
		index := (off + int64(i)) / dev.SectorSize
		s := make([]byte, dev.SectorSize) // fresh: stored sectors are immutable
		if old, ok := m[index]; ok {
			copy(s, old)
		}
		for p := range piecesPerSector {
			piece := i/dev.TornSize + p
			if piece < len(persist) && persist[piece] {
				lo := p * dev.TornSize
				copy(s[lo:lo+dev.TornSize], data[i+lo:i+lo+dev.TornSize])
			}
		}
		m[index] = s
	}
}

// clone returns an image with the same sectors that can change independently.
func (m image) clone() image {
	c := make(image, len(m))
	maps.Copy(c, m)
	return c
}
