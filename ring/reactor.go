package ring

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"ustore/trace"
)

// reactorState is what only the reactor goroutine touches.
type reactorState struct {
	slots    []*Op    // user_data → op in the kernel; keeps op and buffers reachable
	free     []uint64 // free slot indexes
	pending  []*Op    // taken from the queue or to be resubmitted, not yet placed
	taken    []*Op    // scratch for swapping the queue
	inKernel int      // ops (not counting the wake read) whose CQE is outstanding

	wakeBuf   []byte // 8 bytes the eventfd read lands in
	wakeArmed bool
	completed int64 // ops completed since the last admission release
}

// wakeSlot is the user_data of the eventfd read that wakes a reactor sleeping
// in io_uring_enter; op slots are numbered from 0.
const wakeSlot = ^uint64(0)

func (r *Ring) reactor(started chan<- error) {
	// SINGLE_ISSUER ties the ring to the creating thread, and DEFER_TASKRUN
	// posts completions only inside that thread's io_uring_enter: the
	// goroutine must own its thread from before setup until after teardown.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// eBPF measures this thread's off-CPU time (ebpf/bpf/offcpu.bpf.c)
	// while the reactor runs: unregistered before Close returns.
	unregister := trace.AddReactorThread(unix.Gettid())
	defer unregister()
	k, err := openKernelRing(r.cfg)
	if err != nil {
		started <- err
		return
	}
	r.k, r.mode = k, k.mode
	if r.cfg.InflightMax == 0 {
		r.cfg.InflightMax = int(k.cqEntries) - 1
	}
	n := r.cfg.InflightMax
	rs := &reactorState{
		slots:   make([]*Op, n),
		free:    make([]uint64, 0, n),
		pending: make([]*Op, 0, n),
		taken:   make([]*Op, 0, n),
		wakeBuf: make([]byte, 8),
	}
	for i := n - 1; i >= 0; i-- {
		rs.free = append(rs.free, uint64(i))
	}
	r.queue = make([]*Op, 0, n)
	started <- nil

	for {
		closing := r.take(rs)
		r.place(rs)
		for len(rs.pending) > 0 && r.sqFree() == 0 && len(rs.free) > 0 {
			// The SQ is full but slots are free: submit what is placed and
			// place more before waiting, so one turn takes the whole queue.
			if !r.submitOnly() {
				break // EAGAIN/EBUSY: reap first
			}
			r.place(rs)
		}
		if closing && rs.inKernel == 0 && len(rs.pending) == 0 {
			break
		}
		r.submitAndWait(rs)
		r.reap(rs)
		r.release(rs)
	}
	r.teardown(rs)
	unregister()
	close(r.exited)
}

// take moves the queue into pending with one lock acquisition.
func (r *Ring) take(rs *reactorState) (closing bool) {
	r.mu.Lock()
	rs.taken = append(rs.taken[:0], r.queue...)
	clear(r.queue)
	r.queue = r.queue[:0]
	closing = r.closing
	r.mu.Unlock()
	rs.pending = append(rs.pending, rs.taken...)
	clear(rs.taken)
	return closing
}

// place fills SQEs for pending ops while the SQ has room. A linked chain is
// placed whole or not at all: a chain split across two submissions would not
// be linked.
func (r *Ring) place(rs *reactorState) {
	if !rs.wakeArmed && r.sqFree() > 0 {
		s := r.nextSQE()
		*s = sqe{opcode: opRead, fd: int32(r.eventfd), addr: uint64(uintptr(unsafe.Pointer(&rs.wakeBuf[0]))), len: 8, userData: wakeSlot}
		rs.wakeArmed = true
	}
	i, placed := 0, 0
	for i < len(rs.pending) {
		n := 1
		for rs.pending[i+n-1].Flags&FlagLink != 0 {
			n++
		}
		if uint32(n) > r.sqFree() || n > len(rs.free) {
			break
		}
		if batch := r.cfg.SubmitBatchMax; batch > 0 && placed > 0 && placed+n > batch {
			break // the rest goes in the next enter (a chain is never split)
		}
		placed += n
		for j := i; j < i+n; j++ {
			op := rs.pending[j]
			slot := rs.free[len(rs.free)-1]
			rs.free = rs.free[:len(rs.free)-1]
			rs.slots[slot] = op
			r.fill(r.nextSQE(), op, slot, j < i+n-1)
			rs.inKernel++
		}
		i += n
	}
	rest := copy(rs.pending, rs.pending[i:])
	clear(rs.pending[rest:])
	rs.pending = rs.pending[:rest]
}

func (r *Ring) sqFree() uint32 {
	return r.k.sqEntries - (r.k.sqeTail - atomic.LoadUint32(r.k.sqHead))
}

// nextSQE claims the next SQE and publishes its index in the SQ array; the
// tail itself is published in submitAndWait, after every SQE is filled.
func (r *Ring) nextSQE() *sqe {
	k := r.k
	idx := k.sqeTail & k.sqMask
	k.sqArray[idx] = idx
	k.sqeTail++
	return &k.sqes[idx]
}

// fill encodes op into s. The addresses stored are uint64s the GC does not
// see: op stays reachable from the slot table until its CQE is reaped, and so
// do its buffers and iovecs.
func (r *Ring) fill(s *sqe, op *Op, slot uint64, linkNext bool) {
	*s = sqe{fd: int32(op.Fd), userData: slot}
	if linkNext {
		s.flags |= sqeIOLink
	}
	switch op.Kind {
	case OpNop:
		s.opcode = opNop
		s.fd = -1
	case OpFsync:
		s.opcode = opFsync
		if op.Flags&FlagDatasync != 0 {
			s.opFlags = fsyncDatasync
		}
	case OpRead, OpWrite:
		s.off = uint64(op.Off) + uint64(op.N)
		if op.Buf != nil {
			rest := op.Buf[op.N:]
			s.addr = uint64(uintptr(unsafe.Pointer(&rest[0])))
			s.len = uint32(len(rest))
			op.fixed = r.inFixed(rest)
			switch {
			case op.fixed && op.Kind == OpRead:
				s.opcode = opReadFixed
			case op.fixed:
				s.opcode = opWriteFixed
			case op.Kind == OpRead:
				s.opcode = opRead
			default:
				s.opcode = opWrite
			}
			if op.fixed {
				r.stats.fixedOps.Add(1)
			}
			return
		}
		op.iovecs = buildIovecs(op.iovecs[:0], op.Bufs, op.N)
		s.addr = uint64(uintptr(unsafe.Pointer(&op.iovecs[0])))
		s.len = uint32(len(op.iovecs))
		s.opcode = opReadv
		if op.Kind == OpWrite {
			s.opcode = opWritev
		}
	default:
		panic(fmt.Sprintf("ring: fill: op kind %d passed validation", op.Kind))
	}
}

// buildIovecs describes bufs minus their first skip bytes (already done by a
// short transfer).
func buildIovecs(iov []unix.Iovec, bufs [][]byte, skip int) []unix.Iovec {
	for _, b := range bufs {
		if skip >= len(b) {
			skip -= len(b)
			continue
		}
		b = b[skip:]
		skip = 0
		v := unix.Iovec{Base: &b[0]}
		v.SetLen(len(b))
		iov = append(iov, v)
	}
	return iov
}

func (r *Ring) inFixed(b []byte) bool {
	f := r.k.fixed
	if len(f) == 0 {
		return false
	}
	start := uintptr(unsafe.Pointer(&f[0]))
	addr := uintptr(unsafe.Pointer(&b[0]))
	return addr >= start && addr+uintptr(len(b)) <= start+uintptr(len(f))
}

// submitAndWait publishes the SQ tail and makes one io_uring_enter that
// submits everything and, if nothing else is waiting to be placed, sleeps for
// at least one completion. With nothing in the kernel it parks on a Go
// channel instead: a kernel sleep costs an eventfd write per wake.
func (r *Ring) submitAndWait(rs *reactorState) {
	k := r.k
	atomic.StoreUint32(k.sqTail, k.sqeTail)
	toSubmit := k.sqeTail - atomic.LoadUint32(k.sqHead)

	if toSubmit == 0 && rs.inKernel == 0 && len(rs.pending) == 0 {
		r.park()
		return
	}
	var minComplete uint32
	if len(rs.pending) == 0 && atomic.LoadUint32(k.cqTail) == atomic.LoadUint32(k.cqHead) {
		// Dekker with wake(): publish "in kernel", then look at the queue.
		// A submitter pushes, then looks at the state: one of us sees the other.
		r.state.Store(stateInKernel)
		if r.queued() {
			r.state.Store(stateRunning)
		} else {
			minComplete = 1
		}
	}
	r.stats.enters.Add(1)
	r.stats.submitted.Add(uint64(toSubmit))
	if toSubmit > 0 {
		trace.RecordRingBatch(int(toSubmit))
	}
	n, errno := k.enter(toSubmit, minComplete, enterGetEvents)
	r.state.Store(stateRunning)
	switch errno {
	case 0, unix.ETIME:
	case unix.EAGAIN, unix.EBUSY:
		// The kernel is short of resources or the CQ is overcommitted:
		// reaping makes room; the unsubmitted SQEs stay and go next turn.
		r.stats.busy.Add(1)
	default:
		panic(fmt.Sprintf("ring: io_uring_enter(%d, %d): %v (submitted %d)", toSubmit, minComplete, errno, n))
	}
}

// submitOnly hands the filled SQEs to the kernel without waiting.
func (r *Ring) submitOnly() bool {
	k := r.k
	atomic.StoreUint32(k.sqTail, k.sqeTail)
	toSubmit := k.sqeTail - atomic.LoadUint32(k.sqHead)
	r.stats.enters.Add(1)
	r.stats.submitted.Add(uint64(toSubmit))
	if toSubmit > 0 {
		trace.RecordRingBatch(int(toSubmit))
	}
	_, errno := k.enter(toSubmit, 0, enterGetEvents)
	switch errno {
	case 0:
		return true
	case unix.EAGAIN, unix.EBUSY:
		r.stats.busy.Add(1)
		return false
	}
	panic(fmt.Sprintf("ring: io_uring_enter(%d, 0): %v", toSubmit, errno))
}

func (r *Ring) queued() bool {
	r.mu.Lock()
	q := len(r.queue) > 0 || r.closing
	r.mu.Unlock()
	return q
}

// park sleeps on the Go channel until a submitter wakes us.
func (r *Ring) park() {
	r.state.Store(stateParked)
	if r.queued() {
		r.state.Store(stateRunning)
		return
	}
	r.stats.parks.Add(1)
	<-r.wakeCh
	r.state.Store(stateRunning)
}

// reap copies every CQE out and handles it. When the kernel has parked
// completions in its overflow list (IORING_SQ_CQ_OVERFLOW; NODROP keeps them),
// an enter with GETEVENTS moves them into the CQ and we reap again.
func (r *Ring) reap(rs *reactorState) {
	k := r.k
	for {
		head := *k.cqHead // only we write the head
		tail := atomic.LoadUint32(k.cqTail)
		for n := 0; head != tail && n < reapBatchMax; n++ {
			c := k.cqes[head&k.cqMask] // copy before the slot is released
			head++
			atomic.StoreUint32(k.cqHead, head)
			r.handle(rs, c)
		}
		if head != atomic.LoadUint32(k.cqTail) {
			continue
		}
		if atomic.LoadUint32(k.sqFlags)&sqCQOverflow == 0 {
			return
		}
		r.stats.overflowFlushes.Add(1)
		if _, errno := k.enter(0, 0, enterGetEvents); errno != 0 && errno != unix.EAGAIN && errno != unix.EBUSY {
			panic(fmt.Sprintf("ring: flushing CQ overflow: %v", errno))
		}
	}
}

// release wakes submitters waiting for admission, once per reactor turn,
// when ops completed (handle already gave their admission back).
func (r *Ring) release(rs *reactorState) {
	if rs.completed == 0 {
		return
	}
	rs.completed = 0
	if r.blocked.Load() > 0 {
		r.mu.Lock()
		r.space.Broadcast()
		r.mu.Unlock()
	}
}

// teardown runs with nothing admitted: it completes the wake read (so the
// kernel never writes into freed memory), then unmaps and closes the ring.
func (r *Ring) teardown(rs *reactorState) {
	k := r.k
	atomic.StoreUint32(k.sqTail, k.sqeTail)
	if toSubmit := k.sqeTail - atomic.LoadUint32(k.sqHead); toSubmit > 0 {
		k.enter(toSubmit, 0, enterGetEvents)
	}
	for rs.wakeArmed {
		var one = [8]byte{1}
		_, _ = unix.Write(r.eventfd, one[:])
		k.enter(0, 1, enterGetEvents)
		r.reap(rs)
	}
	k.close()
}
