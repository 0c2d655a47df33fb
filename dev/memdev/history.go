package memdev

import (
	"bytes"
	"fmt"

	"ustore/dev"

	"ustore/internal/assert"
)

// OpKind is the kind of a recorded operation.
type OpKind uint8

const (
	OpRead OpKind = iota + 1
	OpWrite
	OpFlush
	opKindCount
)

// String returns "read", "write" or "flush" — the op names of
// dev.MediumError.
func (k OpKind) String() string {
	switch k {
	case OpRead:
		return "read"
	case OpWrite:
		return "write"
	case OpFlush:
		return "flush"
	}
	return fmt.Sprintf("OpKind(%d)", uint8(k))
}

// Op is one recorded operation: one IO of a Read or Write batch, or one
// Flush.
type Op struct {
	Seq  uint64 // position in the history, from 1; strictly increasing
	Kind OpKind
	Off  int64 // byte offset; 0 for a flush
	Len  int   // byte length; 0 for a flush
	Err  error // the injected error it failed with, nil if it succeeded
}

// record is one entry of the history: the Op, and a successful write's data
// (shared, immutable; nil otherwise) for replay.
type record struct {
	Op
	data []byte
}

// Write is one successful write: the data it stored at Off.
type Write struct {
	Seq  uint64 // the Seq of its Op
	Off  int64
	Data []byte
}

// Pieces returns the number of dev.TornSize pieces a Tear of w chooses from.
func (w Write) Pieces() int { return len(w.Data) / dev.TornSize }

// origin is the state the history starts from: a new device's, a crashed
// device's, or the state ForgetHistory left behind.
type origin struct {
	seq     uint64  // the Seq of the last forgotten operation; 0 if none
	durable image   // never modified: replay clones it
	pending []Write // unflushed writes at seq
}

// Seq returns the Seq of the last operation, 0 before the first.
func (d *Device) Seq() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.seq
}

// Ops returns the operations recorded since New, the crash that made d, or
// the last ForgetHistory, in Seq order.
func (d *Device) Ops() []Op {
	d.mu.Lock()
	defer d.mu.Unlock()
	ops := make([]Op, len(d.history))
	for i, r := range d.history {
		ops[i] = r.Op
	}
	return ops
}

// Unflushed returns the writes a crash now chooses from, oldest first:
// index i here is index i of CrashPolicy.Keep and Tear. The data are copies.
func (d *Device) Unflushed() []Write {
	d.mu.Lock()
	defer d.mu.Unlock()
	return copyWrites(d.pending)
}

// UnflushedAt returns the writes CrashAt(seq, ...) chooses from.
func (d *Device) UnflushedAt(seq uint64) []Write {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, pending := d.stateAt(seq)
	return copyWrites(pending)
}

// ForgetHistory drops the recorded operations and their data, so that a long
// run does not keep every write forever. CrashAt and UnflushedAt can then
// target only Seq() and later.
func (d *Device) ForgetHistory() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.origin = origin{seq: d.seq, durable: d.durable.clone(), pending: append([]Write(nil), d.pending...)}
	d.history = nil
}

// stateAt replays the history from its origin up to and including operation
// seq and returns the durable image (a private clone) and the unflushed
// writes at that point. Failed operations change nothing (Invariant 4).
// d.mu is held.
func (d *Device) stateAt(seq uint64) (image, []Write) {
	if !(seq >= d.origin.seq && seq <= d.seq) {
		assert.Failf("memdev: Seq %d outside the recorded history [%d, %d]", seq, d.origin.seq, d.seq)
	}
	durable := d.origin.durable.clone()
	pending := append([]Write(nil), d.origin.pending...)
	for _, r := range d.history {
		if r.Seq > seq {
			break
		}
		if r.Err != nil {
			continue
		}
		switch r.Kind {
		case OpWrite:
			pending = append(pending, Write{Seq: r.Seq, Off: r.Off, Data: r.data})
		case OpFlush:
			for _, w := range pending {
				durable.write(w.Off, w.Data)
			}
			pending = nil
		}
	}
	return durable, pending
}

// next assigns the next Seq. d.mu is held.
func (d *Device) next() uint64 {
	d.seq++
	return d.seq
}

// record appends op, and data for a successful write, to the history,
// checking that Seq only grows (Invariant 2). d.mu is held.
func (d *Device) record(op Op, data []byte) {
	n := len(d.history)
	if !((n == 0 || d.history[n-1].Seq < op.Seq) && op.Seq > d.origin.seq) {
		assert.Failf("memdev: Seq %d recorded out of order", op.Seq)
	}
	d.history = append(d.history, record{Op: op, data: data})
}

// appendPending adds a successful write to the unflushed list, checking
// that Seq only grows (Invariant 2). d.mu is held.
func (d *Device) appendPending(w Write) {
	if n := len(d.pending); n > 0 && d.pending[n-1].Seq >= w.Seq {
		assert.Failf("memdev: unflushed write Seq %d after Seq %d", w.Seq, d.pending[n-1].Seq)
	}
	d.pending = append(d.pending, w)
}

// copyWrites returns ws with private copies of the data, so that no caller
// can modify a stored sector (Invariant 1).
func copyWrites(ws []Write) []Write {
	out := make([]Write, len(ws))
	for i, w := range ws {
		out[i] = Write{Seq: w.Seq, Off: w.Off, Data: bytes.Clone(w.Data)}
	}
	return out
}
