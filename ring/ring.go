package ring

import (
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Config sets up a Ring. The zero value is a sane default.
type Config struct {
	// Entries is the SQ size (default 256); the CQ is twice that unless
	// CQEntries is set.
	Entries uint32
	// CQEntries overrides the CQ size (IORING_SETUP_CQSIZE); it must be at
	// least Entries. Tests set it small to provoke CQ overflow.
	CQEntries uint32
	// InflightMax bounds the operations admitted (queued or in the kernel).
	// Submitters past it wait: that is the ring's backpressure. Default: the
	// CQ size minus one (the wake-up read), so the CQ cannot overflow. A test
	// may set it higher to provoke overflow; nothing is lost then either.
	InflightMax int
	// Mode selects setup flags; ModeAuto steps down from DEFER_TASKRUN.
	Mode Mode
	// FixedBytes, when positive, maps and registers a region of that many
	// bytes (a multiple of 4096) as buffer index 0; reads and writes whose
	// buffer lies inside FixedRegion use READ_FIXED/WRITE_FIXED.
	FixedBytes int
	// SubmitBatchMax is the most operations handed to the kernel per
	// io_uring_enter (a linked chain always goes whole). 0 means the default,
	// 2; negative means no limit. Measured on a virtio disk, handing the
	// kernel eleven reads at once instead of one or two cost a third of the
	// IOPS at queue depth 8-32: the whole batch is dispatched after the
	// kernel's submission plug, in a burst the device then works through,
	// instead of a steady stream (docs/design/ring.md §7).
	SubmitBatchMax int
	// NoDirect disables the direct path: ReadAt, WriteAt and Fsync then always
	// go through the reactor, even when the ring is idle (for measuring).
	NoDirect bool
}

// Ring is one io_uring owned by one goroutine (the reactor), locked to its OS
// thread. Any goroutine may submit; the reactor takes everything queued since
// its last turn, submits it with one io_uring_enter, reaps completions and
// wakes the waiters.
//
// Concurrency: mu guards queue and closing; admitted, state and the stats are
// atomics; everything in kernelRing, slots and the reactor's lists belongs to
// the reactor goroutine alone.
type Ring struct {
	cfg  Config
	k    *kernelRing
	mode Mode

	mu       sync.Mutex
	space    *sync.Cond // signalled when admitted drops and blocked > 0
	queue    []*Op      // submitted, not yet taken by the reactor; len <= InflightMax
	closing  bool
	admitted atomic.Int64 // ops queued or in the kernel
	blocked  atomic.Int32 // submitters waiting for space

	state   atomic.Uint32 // stateRunning, stateInKernel, stateParked
	wakeCh  chan struct{} // cap 1: wakes a parked reactor
	eventfd int           // written to wake a reactor sleeping in the kernel
	exited  chan struct{} // closed when the reactor has torn the ring down

	waiters sync.Pool // *waiter
	stats   stats
}

const (
	stateRunning uint32 = iota
	stateInKernel
	stateParked
)

// New creates a ring and starts its reactor. errors.Is(err, ErrUnavailable)
// means io_uring cannot be used here and the caller should fall back.
func New(cfg Config) (*Ring, error) {
	if cfg.Entries == 0 {
		cfg.Entries = entriesDefault
	}
	if cfg.SubmitBatchMax == 0 {
		cfg.SubmitBatchMax = submitBatchDefault
	}
	if cfg.Entries > entriesMax || cfg.Entries&(cfg.Entries-1) != 0 {
		return nil, fmt.Errorf("ring: %d entries: must be a power of two up to %d", cfg.Entries, entriesMax)
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("ring: eventfd: %w", err)
	}
	r := &Ring{
		cfg:     cfg,
		wakeCh:  make(chan struct{}, 1),
		eventfd: efd,
		exited:  make(chan struct{}),
	}
	r.space = sync.NewCond(&r.mu)
	r.waiters.New = func() any { return &waiter{ch: make(chan struct{}, 1)} }
	started := make(chan error, 1)
	go r.reactor(started)
	if err := <-started; err != nil {
		_ = unix.Close(efd)
		return nil, err
	}
	return r, nil
}

// Mode returns the setup flags the kernel accepted.
func (r *Ring) Mode() Mode { return r.mode }

// FixedRegion returns the registered buffer region (nil without one). Carve
// buffers from it; operations on them skip the kernel's per-op page pinning.
func (r *Ring) FixedRegion() []byte { return r.k.fixed }

// InflightMax is the most operations the ring admits at once.
func (r *Ring) InflightMax() int { return r.cfg.InflightMax }

// Do submits ops as one batch and returns when all have completed. Linked
// chains (FlagLink) run in order; everything else may run in parallel. The
// result is the first op's error in batch order; each op has its own N/Err.
func (r *Ring) Do(ops ...*Op) error {
	if len(ops) == 0 {
		return nil
	}
	w := r.waiters.Get().(*waiter)
	w.remaining.Store(int32(len(ops)))
	for _, op := range ops {
		op.wait, op.done, op.then = w, nil, nil
	}
	if err := r.submit(ops); err != nil {
		r.waiters.Put(w)
		return err
	}
	<-w.ch
	r.waiters.Put(w)
	for _, op := range ops {
		op.wait = nil
		if op.Err != nil {
			return op.Err
		}
	}
	return nil
}

// Submit hands ops to the ring and returns at once; each op is sent to done
// when it completes. done must have room for every op the caller has
// outstanding: the reactor never blocks on it (a full channel is a bug in the
// caller and panics).
func (r *Ring) Submit(done chan<- *Op, ops ...*Op) error {
	for _, op := range ops {
		op.wait, op.done, op.then = nil, done, nil
	}
	return r.submit(ops)
}

// SubmitFunc hands ops to the ring; as each completes, the reactor calls
// then(op) on its own goroutine. If then returns true, the op (refilled by
// then: a new Off, a new Buf) is submitted again at once, in the reactor's
// next batch, without a trip through the queue; this is how a closed loop
// (fio's) runs on the ring with no goroutine handoff per op. then must be
// quick and must not block or call back into the ring: it runs on the
// thread every completion of the ring waits on. Chains are not allowed here.
func (r *Ring) SubmitFunc(then func(*Op) bool, ops ...*Op) error {
	for _, op := range ops {
		if op.Flags&FlagLink != 0 {
			return fmt.Errorf("%w: SubmitFunc takes no linked chains", ErrInvalidOp)
		}
		op.wait, op.done, op.then = nil, nil, then
	}
	return r.submit(ops)
}

func (r *Ring) submit(ops []*Op) error {
	if err := r.validate(ops); err != nil {
		return err
	}
	k := int64(len(ops))
	r.mu.Lock()
	for {
		if r.closing {
			r.mu.Unlock()
			return ErrClosed
		}
		r.blocked.Add(1)
		if r.admitted.Load()+k <= int64(r.cfg.InflightMax) {
			r.blocked.Add(-1)
			break
		}
		r.space.Wait()
		r.blocked.Add(-1)
	}
	r.admitted.Add(k)
	r.queue = append(r.queue, ops...)
	r.mu.Unlock()
	r.wake()
	return nil
}

// validate checks ops before anything is queued, so a bad op is an error of
// the caller's and never an EINVAL/EFAULT from an SQE we built.
func (r *Ring) validate(ops []*Op) error {
	if len(ops) > r.cfg.InflightMax {
		return fmt.Errorf("%w: %d ops, limit %d", ErrBatchTooLarge, len(ops), r.cfg.InflightMax)
	}
	chain := 0
	for i, op := range ops {
		switch op.Kind {
		case OpNop, OpFsync:
		case OpRead, OpWrite:
			if op.length() == 0 {
				return fmt.Errorf("%w: op %d: %s of zero bytes", ErrInvalidOp, i, op.Kind)
			}
			if op.Buf != nil && op.Bufs != nil {
				return fmt.Errorf("%w: op %d: both Buf and Bufs set", ErrInvalidOp, i)
			}
			if len(op.Bufs) > iovecsMax {
				return fmt.Errorf("%w: op %d: %d iovecs, limit %d", ErrInvalidOp, i, len(op.Bufs), iovecsMax)
			}
			if op.Off < 0 {
				return fmt.Errorf("%w: op %d: negative offset %d", ErrInvalidOp, i, op.Off)
			}
		default:
			return fmt.Errorf("%w: op %d: kind %d", ErrInvalidOp, i, op.Kind)
		}
		if op.Kind != OpNop && op.Fd < 0 {
			return fmt.Errorf("%w: op %d: fd %d", ErrInvalidOp, i, op.Fd)
		}
		chain++
		if op.Flags&FlagLink == 0 {
			chain = 0
		}
		if chain > int(r.k.sqEntries) {
			return fmt.Errorf("%w: linked chain longer than the SQ (%d)", ErrBatchTooLarge, r.k.sqEntries)
		}
		op.N, op.Err = 0, nil
	}
	if ops[len(ops)-1].Flags&FlagLink != 0 {
		return fmt.Errorf("%w: the last op of a batch has FlagLink", ErrInvalidOp)
	}
	linkChains(ops)
	return nil
}

// wake makes sure the reactor will look at the queue: it wakes a parked
// reactor through its channel and one sleeping in io_uring_enter through the
// eventfd. The CAS makes at most one waker pay for each sleep.
func (r *Ring) wake() {
	switch r.state.Load() {
	case stateParked:
		if r.state.CompareAndSwap(stateParked, stateRunning) {
			select {
			case r.wakeCh <- struct{}{}:
			default:
			}
		}
	case stateInKernel:
		if r.state.CompareAndSwap(stateInKernel, stateRunning) {
			r.stats.kernelWakes.Add(1)
			var one = [8]byte{1}
			_, _ = unix.Write(r.eventfd, one[:])
		}
	}
}

// Close stops intake, waits for every admitted op to complete, and tears the
// ring down. Ops submitted after Close fail with ErrClosed.
func (r *Ring) Close() error {
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock()
		<-r.exited
		return nil
	}
	r.closing = true
	r.space.Broadcast()
	r.mu.Unlock()
	r.wake()
	<-r.exited
	return unix.Close(r.eventfd)
}

// waiter completes a Do call: the reactor counts down remaining and sends on
// ch (capacity 1, never blocks) when it reaches zero. Pooled: no allocation
// per call.
type waiter struct {
	remaining atomic.Int32
	ch        chan struct{}
}

func (w *waiter) complete() {
	if w.remaining.Add(-1) == 0 {
		w.ch <- struct{}{}
	}
}
