package memdev

import (
	"ustore/internal/assert"
)

// fault is one armed injection: it fires at the at-th operation of kind
// counted since New (counts), or at every one from the at-th on.
type fault struct {
	kind  OpKind
	at    int
	every bool
	err   error
}

// InjectError makes the nth operation of kind from now fail with err (n = 1:
// the next one), once. Each IO of a batch is one operation. An errno err
// comes back as dev.MediumError (errors.Is(err, dev.ErrIO) for syscall.EIO);
// every injected error matches ErrInjected. When several armed faults match
// one operation, the first armed fires and every one-shot among them is used
// up.
func (d *Device) InjectError(kind OpKind, n int, err error) {
	d.arm(kind, n, false, err)
}

// FailFrom makes every operation of kind from the nth from now on fail with
// err (n = 1: from the next one), until ClearErrors.
func (d *Device) FailFrom(kind OpKind, n int, err error) {
	d.arm(kind, n, true, err)
}

// ClearErrors disarms every fault.
func (d *Device) ClearErrors() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.faults = nil
}

func (d *Device) arm(kind OpKind, n int, every bool, err error) {
	if !(kind >= OpRead && kind < opKindCount && n >= 1 && err != nil) {
		assert.Failf("memdev: bad fault: kind %v, n %d, err %v", kind, n, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.faults = append(d.faults, fault{kind: kind, at: d.counts[kind] + n, every: every, err: err})
}

// fault counts one operation of kind at off and returns the error of the
// first armed fault that matches it, if any. Every one-shot fault that
// matches is used up, so none lingers armed for a count already past.
// d.mu is held.
func (d *Device) fault(kind OpKind, off int64) error {
	d.counts[kind]++
	count := d.counts[kind]
	var fired error
	kept := d.faults[:0]
	for _, f := range d.faults {
		match := f.kind == kind && (count == f.at || (f.every && count > f.at))
		if match && fired == nil {
			fired = injected(kind, off, f.err)
		}
		if match && !f.every {
			continue
		}
		kept = append(kept, f)
	}
	d.faults = kept
	return fired
}
