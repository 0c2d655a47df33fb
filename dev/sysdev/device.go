package sysdev

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"ustore/dev"
)

// bufferSize is the size of the buffers of a Device's pool: 64 KiB, the
// largest node size. The pool has no fixed region: pread/pwrite gain nothing
// from registered memory.
const bufferSize = 64 << 10

// Device implements dev.Device.
var _ dev.Device = (*Device)(nil)

// Device is a dev.Device over pread, pwrite and fdatasync on one fd.
//
// Concurrency: every method may be called from any goroutine. Read, Write
// and Flush hold mu's read lock from their closed check until every job they
// queued is done; Close takes the write lock, so it waits for calls in
// flight and no job is ever sent on a closed channel (Invariant 5). The
// workers touch only the jobs they receive: job.ios belong to them from the
// send until job.done.Done(). Everything else is set by Open and never
// changes.
type Device struct {
	path    string
	fd      int
	size    int64
	direct  bool
	sys     *syscalls
	buffers *dev.BufferPool

	jobs    chan job // capacity: the worker count (Invariant 2)
	workers sync.WaitGroup

	mu     sync.RWMutex
	closed bool
}

// newDevice starts the workers of a device over fd.
func newDevice(path string, fd int, size int64, direct bool, opts Options) *Device {
	d := &Device{
		path:    path,
		fd:      fd,
		size:    size,
		direct:  direct,
		sys:     opts.sys,
		buffers: dev.NewBufferPool(nil, bufferSize),
		jobs:    make(chan job, opts.Workers),
	}
	d.workers.Add(opts.Workers)
	for range opts.Workers {
		go d.work()
	}
	return d
}

// Size returns the device's size in bytes.
func (d *Device) Size() int64 { return d.size }

// Buffers returns the device's pool of aligned buffers.
func (d *Device) Buffers() *dev.BufferPool { return d.buffers }

// Backend names the implementation and whether O_DIRECT is on.
func (d *Device) Backend() string {
	if d.direct {
		return "pread/pwrite (O_DIRECT)"
	}
	return "pread/pwrite (buffered)"
}

// Read fills each IO's buffer with pread, the IOs in parallel on the pool.
func (d *Device) Read(ios []dev.IO) error { return d.run(jobRead, ios) }

// Write writes each IO's buffer, the IOs in parallel on the pool: a run of
// IOs adjacent on the device and in the batch as one pwritev, any other IO
// with pwrite.
func (d *Device) Write(ios []dev.IO) error { return d.run(jobWrite, ios) }

// Flush calls fdatasync: every write completed before the call is durable
// when it returns nil.
func (d *Device) Flush() error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return fmt.Errorf("sysdev: flush %s: %w", d.path, dev.ErrClosed)
	}
	var io [1]dev.IO
	var done sync.WaitGroup
	done.Add(1)
	d.jobs <- job{kind: jobFlush, ios: io[:], done: &done}
	done.Wait()
	return io[0].Err
}

// WriteDurable writes each stage and flushes after it, stopping at the first
// error: a stage after a failed write or flush is never written.
func (d *Device) WriteDurable(stages ...[]dev.IO) error {
	for _, stage := range stages {
		if err := d.Write(stage); err != nil {
			return err
		}
		if err := d.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// Close stops the workers and closes the fd. It waits for calls in flight,
// though the contract does not ask it to.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fmt.Errorf("sysdev: close %s: %w", d.path, dev.ErrClosed)
	}
	d.closed = true
	close(d.jobs)
	d.workers.Wait()
	if err := unix.Close(d.fd); err != nil {
		return fmt.Errorf("sysdev: close %s: %w", d.path, err)
	}
	return nil
}

// run checks a batch, hands its IOs to the workers — a read per job, a run
// of adjacent writes per job (runEnd) — and waits for all of them
// (Invariant 3).
func (d *Device) run(kind jobKind, ios []dev.IO) error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	var err error
	if d.closed {
		err = fmt.Errorf("sysdev: %s %s: %w", kind, d.path, dev.ErrClosed)
	} else {
		err = checkIO(ios, d.size)
	}
	for i := range ios {
		ios[i].Err = err
	}
	if err != nil {
		return err
	}
	var done sync.WaitGroup
	for i := 0; i < len(ios); {
		j := i + 1
		if kind == jobWrite {
			j = runEnd(ios, i)
		}
		done.Add(1)
		d.jobs <- job{kind: kind, ios: ios[i:j:j], done: &done}
		i = j
	}
	done.Wait()
	return dev.FirstError(ios)
}

// runEnd is the end of the run of writes that starts at ios[i]: the IOs
// after it, in the batch's order, each starting where the one before ends,
// at most writevIOsMax in all. Adjacent writes are one request to the
// device (a commit's nodes are mostly contiguous and listed in offset
// order); writes the batch lists out of order stay separate, in parallel.
func runEnd(ios []dev.IO, i int) int {
	j := i + 1
	for j < len(ios) && j-i < writevIOsMax && ios[j].Off == ios[j-1].Off+int64(len(ios[j-1].Buf)) {
		j++
	}
	return j
}

// checkIO is dev.CheckIO plus the range check that CheckIO writes as
// Off+len > size, which an Off near math.MaxInt64 overflows past
// (Invariant 1).
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
