package memdev

import (
	"sync/atomic"

	"ustore/internal/assert"
)

// HoldCall names the call a Hold stops.
type HoldCall int

const (
	// HoldWrite: a Write called directly (a WriteDurable's own writes are
	// not it): buffered data on its way to the device.
	HoldWrite HoldCall = iota
	// HoldWriteDurable: a WriteDurable: a commit or a log sync.
	HoldWriteDurable
	holdCallCount
)

// Hold stops one call before it does anything, until Release: a test
// holds a writeback, a commit or a log sync mid-way and looks at what the
// rest of the system does meanwhile.
type Hold struct {
	held    chan struct{}
	release chan struct{}
}

// Held is closed once the call is held.
func (h *Hold) Held() <-chan struct{} { return h.held }

// Release lets the held call go on (or the next one, if none came yet).
func (h *Hold) Release() { close(h.release) }

// HoldNext makes the next call of kind wait until the Hold it returns is
// released. Only one Hold per kind is armed at a time.
func (d *Device) HoldNext(call HoldCall) *Hold {
	h := &Hold{held: make(chan struct{}), release: make(chan struct{})}
	assert.That(d.holds[call].CompareAndSwap(nil, h), "memdev: a Hold of this call is armed already")
	return h
}

// wait holds the calling call if a Hold of kind is armed (d.mu not held).
func (d *Device) wait(call HoldCall) {
	if h := d.holds[call].Swap(nil); h != nil {
		close(h.held)
		<-h.release
	}
}

// holds are the armed Holds, one slot per kind.
type holds [holdCallCount]atomic.Pointer[Hold]
