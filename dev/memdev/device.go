package memdev

import (
	"bytes"
	"fmt"
	"sync"

	"ustore/dev"

	"ustore/internal/assert"
)

// bufferSize is the size of the buffers of a Device's pool: 64 KiB, the
// largest node size, so that one pooled buffer holds any node.
const bufferSize = 64 << 10

// Device implements dev.Device.
var _ dev.Device = (*Device)(nil)

// Device is an in-memory dev.Device that records its history, can crash
// (Crash, CrashAt) and can fail chosen operations (InjectError, FailFrom).
//
// Concurrency: every method may be called from any goroutine. mu guards all
// mutable state, and every operation holds it from its start to its end, so
// the operations of all goroutines take effect one at a time, in Seq order:
// the history is one order in which the calls could have run. Write copies
// its buffers before taking mu, so large writes do not serialize their
// copies. size and buffers never change after New.
type Device struct {
	size    int64
	buffers *dev.BufferPool

	mu       sync.Mutex
	closed   bool
	seq      uint64           // Seq of the last operation; 0 before the first
	volatile image            // the newest data: what Read returns
	durable  image            // what any power cut leaves: the flushed writes
	pending  []Write          // successful writes since the last successful flush, in Seq order
	origin   origin           // the state the history starts from
	history  []record         // every operation since origin, in Seq order
	counts   [opKindCount]int // operations of each kind since New: fault targets count on it
	faults   []fault          // armed faults, oldest first
	holds    holds            // armed Holds (HoldNext); not guarded by mu
}

// New returns an empty (zero-filled) device of size bytes. size must be a
// positive multiple of dev.SectorSize.
func New(size int64) *Device {
	if !(size > 0 && size%dev.SectorSize == 0) {
		assert.Failf("memdev: size %d is not a positive multiple of %d", size, dev.SectorSize)
	}
	return newFromImage(size, make(image))
}

// newFromImage returns a device whose durable and volatile data are img, with
// an empty history that starts from img. img becomes the device's.
func newFromImage(size int64, img image) *Device {
	return &Device{
		size:     size,
		buffers:  dev.NewBufferPool(nil, bufferSize),
		volatile: img,
		durable:  img.clone(),
		origin:   origin{durable: img.clone()},
	}
}

// Size returns the device's size in bytes.
func (d *Device) Size() int64 { return d.size }

// Buffers returns the device's pool of aligned buffers (heap memory: there
// is nothing to register).
func (d *Device) Buffers() *dev.BufferPool { return d.buffers }

// Backend returns "memory".
func (d *Device) Backend() string { return "memory" }

// Read fills each IO's buffer with the newest data written there (flushed or
// not). A read failed by a fault leaves its buffer untouched.
func (d *Device) Read(ios []dev.IO) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.admit("read", ios); err != nil {
		return err
	}
	for i := range ios {
		io := &ios[i]
		op := Op{Seq: d.next(), Kind: OpRead, Off: io.Off, Len: len(io.Buf)}
		op.Err = d.fault(OpRead, io.Off)
		if op.Err == nil {
			d.volatile.read(io.Off, io.Buf)
		}
		io.Err = op.Err
		d.record(op, nil)
	}
	return dev.FirstError(ios)
}

// Write stores each IO's data in the volatile image and records it as
// unflushed. A write failed by a fault changes nothing (Invariant 4).
func (d *Device) Write(ios []dev.IO) error {
	d.wait(HoldWrite)
	return d.write(ios)
}

// write is Write without its Hold: WriteDurable's stages are not Writes
// a test holds with HoldWrite.
func (d *Device) write(ios []dev.IO) error {
	// Copy outside the lock, so that large writes do not serialize their
	// copies: the copies become the stored sectors, shared and immutable
	// from here on (Invariant 1). A rejected batch wastes its copies.
	copies := make([][]byte, len(ios))
	for i := range ios {
		copies[i] = bytes.Clone(ios[i].Buf)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.admit("write", ios); err != nil {
		return err
	}
	for i := range ios {
		io := &ios[i]
		op := Op{Seq: d.next(), Kind: OpWrite, Off: io.Off, Len: len(io.Buf)}
		op.Err = d.fault(OpWrite, io.Off)
		var data []byte
		if op.Err == nil {
			data = copies[i]
			d.volatile.write(io.Off, data)
			d.appendPending(Write{Seq: op.Seq, Off: op.Off, Data: data})
		}
		io.Err = op.Err
		d.record(op, data)
	}
	return dev.FirstError(ios)
}

// Flush makes every completed write durable. A flush failed by a fault moves
// nothing: the unflushed writes stay unflushed (Invariant 4).
func (d *Device) Flush() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("memdev: flush: %w", dev.ErrClosed)
	}
	op := Op{Seq: d.next(), Kind: OpFlush}
	op.Err = d.fault(OpFlush, 0)
	if op.Err == nil {
		for _, w := range d.pending {
			d.durable.write(w.Off, w.Data)
		}
		d.pending = nil
	}
	d.record(op, nil)
	return op.Err
}

// WriteDurable writes each stage and flushes after it, stopping at the first
// error: a stage after a failed write or flush is never written.
func (d *Device) WriteDurable(stages ...[]dev.IO) error {
	d.wait(HoldWriteDurable)
	for _, stage := range stages {
		if err := d.write(stage); err != nil {
			return err
		}
		if err := d.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// Close makes every later Read, Write, Flush and WriteDurable fail with
// dev.ErrClosed. The data stays: a closed device can still Crash, which is
// how a test restarts after an orderly shutdown.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("memdev: close: %w", dev.ErrClosed)
	}
	d.closed = true
	return nil
}

// admit rejects a batch that must not run — device closed, or a bad IO —
// setting every IO's Err to the error it returns. d.mu is held.
func (d *Device) admit(op string, ios []dev.IO) error {
	var err error
	if d.closed {
		err = fmt.Errorf("memdev: %s: %w", op, dev.ErrClosed)
	} else {
		err = checkIO(ios, d.size)
	}
	for i := range ios {
		ios[i].Err = err
	}
	return err
}

// checkIO is dev.CheckIO plus the range check that CheckIO writes as
// Off+len > size, which an Off near math.MaxInt64 overflows past.
func checkIO(ios []dev.IO, size int64) error {
	if err := dev.CheckIO(ios, size); err != nil {
		return err
	}
	for i := range ios {
		if n := int64(len(ios[i].Buf)); ios[i].Off > size-n {
			return fmt.Errorf("%w: io %d: offset %d length %d outside device of %d bytes",
				dev.ErrOutOfRange, i, ios[i].Off, n, size)
		}
	}
	return nil
}
