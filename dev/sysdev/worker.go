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

// job is one IO of a batch, or one flush (io then only carries the result).
// The worker sets io.Err and calls done.Done; until then io is the worker's.
type job struct {
	kind jobKind
	io   *dev.IO
	done *sync.WaitGroup
}

// work runs jobs until Close closes the channel. Only workers issue I/O
// syscalls on d.fd (Invariant 2).
func (d *Device) work() {
	defer d.workers.Done()
	for j := range d.jobs {
		switch j.kind {
		case jobRead:
			j.io.Err = transfer("read", d.sys.pread, d.fd, j.io.Buf, j.io.Off)
		case jobWrite:
			j.io.Err = transfer("write", d.sys.pwrite, d.fd, j.io.Buf, j.io.Off)
		case jobFlush:
			j.io.Err = flush(d.sys.fdatasync, d.fd)
		default:
			assert.Failf("sysdev: unknown job kind %d", j.kind)
		}
		j.done.Done()
	}
}
