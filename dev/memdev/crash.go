package memdev

import (
	"math/rand/v2"

	"ustore/internal/assert"
)

// CrashPolicy chooses what a power cut keeps of the unflushed writes. The
// zero value keeps none of them.
type CrashPolicy struct {
	// Keep reports whether unflushed write i (0 = oldest, as listed by
	// Unflushed or UnflushedAt) survives whole. nil keeps none. w.Data is
	// the device's own copy: read it, never modify it.
	Keep func(i int, w Write) bool
	// Tear, when not nil, keeps only some pieces of one unflushed write.
	Tear *Tear
}

// Tear keeps some dev.TornSize pieces of one unflushed write and loses the
// rest: each piece of its range then holds either all of the write's bytes
// or all of what was there before it.
type Tear struct {
	// Index is the unflushed write to tear, numbered as for Keep. The
	// torn write is applied in its place in the order whatever Keep says
	// about it.
	Index int
	// Pieces[j] reports whether piece j — bytes [j*TornSize, (j+1)*TornSize)
	// of the write — persists. Pieces past the end of the slice are lost.
	Pieces []bool
}

// KeepNone loses every unflushed write: only flushed data survives.
func KeepNone() CrashPolicy { return CrashPolicy{} }

// KeepAll keeps every unflushed write: the crash loses nothing.
func KeepAll() CrashPolicy {
	return CrashPolicy{Keep: func(int, Write) bool { return true }}
}

// KeepSubset keeps unflushed write i iff bit i of mask is set, so that a test
// can enumerate every subset of up to 64 writes; writes at index 64 and
// above are lost.
func KeepSubset(mask uint64) CrashPolicy {
	return CrashPolicy{Keep: func(i int, _ Write) bool { return i < 64 && mask&(1<<i) != 0 }}
}

// KeepRandom keeps each unflushed write with probability 1/2, drawing from
// rng in index order, so a seed reproduces the choice.
func KeepRandom(rng *rand.Rand) CrashPolicy {
	return CrashPolicy{Keep: func(int, Write) bool { return rng.IntN(2) == 1 }}
}

// MaskPieces returns the Tear.Pieces of an n-piece write whose piece j
// persists iff bit j of mask is set (pieces 64 and above are lost).
func MaskPieces(mask uint64, n int) []bool {
	pieces := make([]bool, n)
	for j := range min(n, 64) {
		pieces[j] = mask&(1<<j) != 0
	}
	return pieces
}

// RandomPieces returns the Tear.Pieces of an n-piece write whose pieces each
// persist with probability 1/2, drawn from rng.
func RandomPieces(rng *rand.Rand, n int) []bool {
	pieces := make([]bool, n)
	for j := range pieces {
		pieces[j] = rng.IntN(2) == 1
	}
	return pieces
}

// Crash returns a new device holding what a power cut now would leave: the
// durable image, then the unflushed writes that p keeps (and the one it
// tears), applied in Seq order. The new device has no history, no faults
// and is open, and nothing done to it affects d or the other way round.
// d may be closed; it is not changed.
func (d *Device) Crash(p CrashPolicy) *Device {
	d.mu.Lock()
	durable := d.durable.clone()
	pending := append([]Write(nil), d.pending...)
	d.mu.Unlock()
	return newFromImage(d.size, applyPolicy(durable, pending, p))
}

// CrashAt is Crash as if power had failed right after operation seq: no
// later operation happened. seq may be any Seq from the history's origin
// (0 for a new device) to Seq(); outside that range it panics.
func (d *Device) CrashAt(seq uint64, p CrashPolicy) *Device {
	d.mu.Lock()
	durable, pending := d.stateAt(seq)
	d.mu.Unlock()
	return newFromImage(d.size, applyPolicy(durable, pending, p))
}

// applyPolicy applies to img (a private clone) the unflushed writes that p
// keeps or tears, oldest first, so that of two kept writes to one sector the
// newer wins, and returns img.
func applyPolicy(img image, pending []Write, p CrashPolicy) image {
	if p.Tear != nil && !(p.Tear.Index >= 0 && p.Tear.Index < len(pending)) {
		assert.Failf("memdev: Tear.Index %d, but %d unflushed writes", p.Tear.Index, len(pending))
	}
	for i, w := range pending {
		switch {
		case p.Tear != nil && p.Tear.Index == i:
			img.writeTorn(w.Off, w.Data, p.Tear.Pieces)
		case p.Keep != nil && p.Keep(i, w):
			img.write(w.Off, w.Data)
		}
	}
	return img
}
