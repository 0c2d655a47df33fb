package uringdev

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"

	"ustore/dev"
	"ustore/dev/sysdev"
	"ustore/ring"
)

// Options configure Open.
type Options struct {
	// Size: when positive and the path is a regular file smaller than Size,
	// the file is extended to Size, its space allocated (sysdev.Options.Size).
	// Block devices keep their size.
	Size int64
	// Buffered skips O_DIRECT: I/O goes through the page cache.
	Buffered bool
	// ReadOnly opens the backing store O_RDONLY (sysdev.Options.ReadOnly):
	// never created, extended or written. Size must be 0.
	ReadOnly bool
	// BufferSize is the size of each pooled buffer (default 64 KiB).
	BufferSize int
	// PoolBytes is the registered region carved into pooled buffers
	// (default 8 MiB; negative: none). If the kernel refuses to register it (RLIMIT_MEMLOCK),
	// the device runs without fixed buffers and says so.
	PoolBytes int
	// Ring configures the ring; its FixedBytes is set from PoolBytes.
	Ring ring.Config
	// Logger receives the lines about fallbacks (default slog.Default()).
	Logger *slog.Logger
}

// Device is a dev.Device over io_uring.
type Device struct {
	f       *os.File
	fd      int
	size    int64
	direct  bool
	r       *ring.Ring
	pool    *dev.BufferPool
	closed  atomic.Bool
	batches sync.Pool // *batch
}

var _ dev.Device = (*Device)(nil)

// Open opens path for io_uring I/O. errors.Is(err, ring.ErrUnavailable) means
// io_uring cannot be used on this machine.
func Open(path string, opts Options) (*Device, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if opts.BufferSize == 0 {
		opts.BufferSize = 64 << 10
	}
	if opts.PoolBytes == 0 {
		opts.PoolBytes = 8 << 20
	}
	// The backing store is opened as sysdev opens it: sized, its size and
	// name made durable, O_DIRECT only where reads really work with it.
	fd, size, direct, err := sysdev.OpenBacking(path, sysdev.Options{Size: opts.Size, Direct: !opts.Buffered, ReadOnly: opts.ReadOnly, Logger: log})
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), path)
	cfg := opts.Ring
	cfg.FixedBytes = max(0, opts.PoolBytes/opts.BufferSize*opts.BufferSize)
	r, err := ring.New(cfg)
	if err != nil && cfg.FixedBytes > 0 && !errors.Is(err, ring.ErrUnavailable) {
		log.Warn("uringdev: running without registered buffers", "err", err)
		cfg.FixedBytes = 0
		r, err = ring.New(cfg)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	d := &Device{f: f, fd: int(f.Fd()), size: size, direct: direct, r: r}
	d.pool = dev.NewBufferPool(r.FixedRegion(), opts.BufferSize)
	d.batches.New = func() any { return new(batch) }
	return d, nil
}

// Size returns the device size in bytes.
func (d *Device) Size() int64 { return d.size }

// Buffers returns the pool of registered buffers.
func (d *Device) Buffers() *dev.BufferPool { return d.pool }

// Backend names the implementation.
func (d *Device) Backend() string {
	mode := "buffered"
	if d.direct {
		mode = "O_DIRECT"
	}
	fixed := "no registered buffers"
	if d.r.FixedRegion() != nil {
		fixed = fmt.Sprintf("%d KiB registered buffers", len(d.r.FixedRegion())>>10)
	}
	return fmt.Sprintf("io_uring (%s, %s, %s)", d.r.Mode(), mode, fixed)
}

// Ring exposes the ring for benchmarks and statistics.
func (d *Device) Ring() *ring.Ring { return d.r }

// Read fills every IO's buffer.
func (d *Device) Read(ios []dev.IO) error { return d.rw(ios, ring.OpRead) }

// Write writes every IO's buffer.
func (d *Device) Write(ios []dev.IO) error { return d.rw(ios, ring.OpWrite) }

func (d *Device) rw(ios []dev.IO, kind ring.OpKind) error {
	if d.closed.Load() {
		return dev.ErrClosed
	}
	if err := dev.CheckIO(ios, d.size); err != nil {
		return err
	}
	if len(ios) == 1 {
		// A lone IO takes the ring's direct path when the ring is idle.
		io := &ios[0]
		var err error
		if kind == ring.OpRead {
			_, err = d.r.ReadAt(d.fd, io.Buf, io.Off)
		} else {
			_, err = d.r.WriteAt(d.fd, io.Buf, io.Off)
		}
		io.Err = d.mapErr(kind, io.Off, err)
		return io.Err
	}
	b := d.getBatch()
	defer d.putBatch(b)
	// Ops are built from the whole batch first, so that runs of adjacent
	// writes merge across what would be a piece boundary; a batch of more
	// ops than the ring admits at once then goes in ring-sized pieces of
	// ops (not of IOs: a 10,000-node commit is a few hundred writevs, one
	// piece, not twenty IO-counted pieces each waiting for the last).
	b.addIOs(kind, d.fd, ios)
	return d.run(b, ios)
}

// Flush makes completed writes durable.
func (d *Device) Flush() error {
	if d.closed.Load() {
		return dev.ErrClosed
	}
	return d.mapErr(ring.OpFsync, 0, d.r.Fsync(d.fd, true))
}

// WriteDurable writes each stage and flushes after it, one submission per
// stage.
func (d *Device) WriteDurable(stages ...[]dev.IO) error {
	if d.closed.Load() {
		return dev.ErrClosed
	}
	for _, ios := range stages {
		if err := dev.CheckIO(ios, d.size); err != nil {
			return err
		}
	}
	if len(stages) == 0 {
		return d.Flush()
	}
	b := d.getBatch()
	defer d.putBatch(b)
	for _, ios := range stages {
		b.reset()
		b.addIOs(ring.OpWrite, d.fd, ios)
		flush := ring.Op{Kind: ring.OpFsync, Fd: d.fd, Flags: ring.FlagDatasync}
		if len(b.ops) == 1 {
			// A lone write (or one run of adjacent ones, a writev) and its
			// flush go as one linked chain.
			b.ops[0].Flags |= ring.FlagLink
			b.add(flush)
			if err := d.run(b, ios); err != nil {
				return err
			}
			continue
		}
		// Parallel writes first (in ring-sized pieces if there are more
		// than the ring admits: run); the flush only once all have
		// completed.
		if len(b.ops) > 0 {
			if err := d.run(b, ios); err != nil {
				return err
			}
		}
		if err := d.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// run submits the batch and copies each op's result into ios (the batch may
// hold one op more than ios: a trailing flush). A batch of more ops than the
// ring admits at once goes in pieces of InflightMax ops, each waited for
// before the next (a linked write and flush are never split: WriteDurable
// links only a batch of two ops).
func (d *Device) run(b *batch, ios []dev.IO) error {
	for piece := range slices.Chunk(b.ptrs, d.r.InflightMax()) {
		_ = d.r.Do(piece...)
	}
	for i := range b.ops {
		op := &b.ops[i]
		err := d.mapErr(op.Kind, op.Off, op.Err)
		if i < len(b.groups) {
			// A writev's error is each of its IOs'.
			for _, j := range b.order[b.groups[i]:b.groupEnd(i, len(ios))] {
				ios[j].Err = err
			}
		} else if err != nil {
			// The flush of the stage failed: report it on every IO.
			for j := range ios {
				if ios[j].Err == nil {
					ios[j].Err = err
				}
			}
		}
	}
	if err := dev.FirstError(ios); err != nil {
		return err
	}
	if len(ios) == 0 && len(b.ops) > 0 {
		return d.mapErr(b.ops[0].Kind, 0, b.ops[0].Err)
	}
	return nil
}

func (d *Device) mapErr(kind ring.OpKind, off int64, err error) error {
	var errno syscall.Errno
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ring.ErrClosed):
		return dev.ErrClosed
	case errors.As(err, &errno):
		return dev.MediumError(kind.String(), off, errno)
	}
	return fmt.Errorf("uringdev: %s at offset %d: %w", kind, off, err)
}

// Close closes the ring and the file. Callers must have no call in flight.
func (d *Device) Close() error {
	if d.closed.Swap(true) {
		return dev.ErrClosed
	}
	err := d.r.Close()
	if cerr := d.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// batch is a pooled set of ops and the pointer slice Do takes: no
// allocation per call once warm.
type batch struct {
	ops  []ring.Op
	ptrs []*ring.Op
	// order lists the IOs' indexes in the order addIOs made ops of them
	// (by offset, for writes); groups[k] is where op k's IOs start in
	// order, for the ops addIOs made (a trailing flush has none); bufs
	// backs their writevs' Bufs.
	order  []int
	groups []int
	bufs   [][]byte
}

// mergeIOsMax bounds the IOs one vectored op carries (the kernel's
// UIO_MAXIOV is 1024).
const mergeIOsMax = 64

// addIOs adds one op per IO, except that writes adjacent on the device —
// in whatever order the batch lists them — become one writev of their
// buffers. Each op the device handles is a request, and on a virtual disk
// each request costs more than its bytes: an fsync's four 4 KiB blocks,
// allocated side by side, were four requests, 45–60 µs of submission for
// the first and ~230 µs of device time for the four (docs/BENCHMARKS.md,
// "Adjacent writes as one request"). The IOs of a batch run in parallel, so
// their order within it means nothing to the device. (Reads stay one op
// each, in order: a read is short only at the file's end, and one op per
// IO keeps that end on the IO that met it.)
func (b *batch) addIOs(kind ring.OpKind, fd int, ios []dev.IO) {
	for i := range ios {
		b.order = append(b.order, i)
	}
	if kind == ring.OpWrite && !slices.IsSortedFunc(ios, byOff) {
		slices.SortFunc(b.order, func(x, y int) int { return cmp.Compare(ios[x].Off, ios[y].Off) })
	}
	for i := 0; i < len(b.order); {
		first := &ios[b.order[i]]
		j := i + 1
		end := first.Off + int64(len(first.Buf))
		for kind == ring.OpWrite && j < len(b.order) && j-i < mergeIOsMax && ios[b.order[j]].Off == end {
			end += int64(len(ios[b.order[j]].Buf))
			j++
		}
		op := ring.Op{Kind: kind, Fd: fd, Off: first.Off}
		if j-i == 1 {
			op.Buf = first.Buf
		} else {
			start := len(b.bufs)
			for k := i; k < j; k++ {
				b.bufs = append(b.bufs, ios[b.order[k]].Buf)
			}
			op.Bufs = b.bufs[start:len(b.bufs):len(b.bufs)]
		}
		b.groups = append(b.groups, i)
		b.add(op)
		i = j
	}
}

func byOff(x, y dev.IO) int { return cmp.Compare(x.Off, y.Off) }

// groupEnd is the end of op k's IOs among n.
func (b *batch) groupEnd(k, n int) int {
	if k+1 < len(b.groups) {
		return b.groups[k+1]
	}
	return n
}

func (d *Device) getBatch() *batch {
	b := d.batches.Get().(*batch)
	b.reset()
	return b
}

func (d *Device) putBatch(b *batch) {
	clear(b.ops) // drop buffer references
	clear(b.bufs)
	d.batches.Put(b)
}

func (b *batch) reset() {
	b.ops = b.ops[:0]
	b.ptrs = b.ptrs[:0]
	b.order = b.order[:0]
	b.groups = b.groups[:0]
	clear(b.bufs)
	b.bufs = b.bufs[:0]
}

func (b *batch) add(op ring.Op) {
	if len(b.ops) == cap(b.ops) {
		// Growing moves the ops: rebuild the pointers after the append.
		b.ops = append(b.ops, op)
		b.ptrs = b.ptrs[:0]
		for i := range b.ops {
			b.ptrs = append(b.ptrs, &b.ops[i])
		}
		return
	}
	b.ops = append(b.ops, op)
	b.ptrs = append(b.ptrs, &b.ops[len(b.ops)-1])
}
