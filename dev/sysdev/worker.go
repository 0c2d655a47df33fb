package sysdev

import (
	"sync"

	"ustore/dev"

	"ustore/internal/assert"
)

// jobKind is what a worker does with a job.
type jobKind uint8

const (
	jobRead jobKind = iota + 1
	jobWrite
	jobFlush
)

// String returns the op name used in errors ("read", "write", "flush").
func (k jobKind) String() string {
	switch k {
	case jobRead:
		return "read"
	case jobWrite:
		return "write"
	case jobFlush:
		return "flush"
	}
	return "unknown"
}

// job is one read, one run of writes, or one flush (ios then holds one IO
// that only carries the result). The worker sets each IO's Err and calls
// done.Done; until then ios is the worker's.
type job struct {
	kind jobKind
	ios  []dev.IO // a read: one IO; a write: IOs adjacent on the device, in order
	done *sync.WaitGroup
}

// work runs jobs until Close closes the channel. Only workers issue I/O
// syscalls on d.fd (Invariant 2).
func (d *Device) work() {
	defer d.workers.Done()
	for j := range d.jobs {
		var err error
		switch j.kind {
		case jobRead:
			err = transfer("read", d.sys.pread, d.fd, j.ios[0].Buf, j.ios[0].Off)
		case jobWrite:
			err = d.writeRun(j.ios)
		case jobFlush:
			err = flush(d.sys.fdatasync, d.fd)
		default:
			assert.Failf("sysdev: unknown job kind %d", j.kind)
		}
		for i := range j.ios {
			j.ios[i].Err = err
		}
		j.done.Done()
	}
}

// writeRun writes IOs adjacent on the device: one with pwrite, more as one
// pwritev of their buffers. A run is one request, so its IOs share its
// result: a failed pwritev fails each of them (the device cannot say which
// sector it failed on).
func (d *Device) writeRun(ios []dev.IO) error {
	if len(ios) == 1 {
		return transfer("write", d.sys.pwrite, d.fd, ios[0].Buf, ios[0].Off)
	}
	bufs := make([][]byte, len(ios))
	for i := range ios {
		bufs[i] = ios[i].Buf
	}
	return transferv(d.sys.pwritev, d.fd, bufs, ios[0].Off)
}
