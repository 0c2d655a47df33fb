package ring

import (
	"fmt"
	"io"
	"syscall"

	"golang.org/x/sys/unix"
)

// handle maps one CQE to its op's result. Errno policy, per operation:
//
//	res >= 0, full          done
//	res > 0, short          resubmit the rest (a short transfer also cancels
//	                        the rest of its chain; the chain resumes from it)
//	res == 0, short         read: io.EOF; write: io.ErrShortWrite (no progress)
//	EINTR, EAGAIN, EBUSY    resubmit
//	ECANCELED               resubmitted if its chain is resuming, else ErrCanceled
//	EFAULT                  assertion failure: the kernel could not reach memory we gave it
//	EINVAL                  assertion failure for nop and fsync (only our SQE can be
//	                        wrong); for read/write, returned: O_DIRECT refuses
//	                        misaligned buffers, offsets and lengths the caller chose
//	anything else           to the caller (EIO, ENOSPC, EBADF, ...)
func (r *Ring) handle(rs *reactorState, c cqe) {
	if c.userData == wakeSlot {
		handleWake(rs, c)
		return
	}
	op := rs.slots[c.userData]
	rs.slots[c.userData] = nil
	rs.free = append(rs.free, c.userData)
	rs.inKernel--

	head := op.head
	if r.result(op, c) {
		r.stats.resubmits.Add(1)
		if head.restart < 0 || op.index < head.restart {
			head.restart = op.index
		}
	}
	head.pending--
	if head.pending > 0 {
		return
	}
	if head.restart >= 0 {
		resubmitChain(rs, head)
		return
	}
	r.deliverChain(rs, head)
}

// handleWake takes the completion of the eventfd read that wakes the
// reactor.
func handleWake(rs *reactorState, c cqe) {
	rs.wakeArmed = false
	if c.res < 0 && syscall.Errno(-c.res) != unix.ECANCELED {
		panic(fmt.Sprintf("ring: eventfd read: %v", syscall.Errno(-c.res)))
	}
}

// result applies c's result to op by the policy above, and reports
// whether op must be resubmitted.
func (r *Ring) result(op *Op, c cqe) (retry bool) {
	if c.res < 0 {
		return resultErrno(op, syscall.Errno(-c.res))
	}
	op.N += int(c.res)
	switch {
	case op.Kind != OpRead && op.Kind != OpWrite, op.N == op.length():
	case c.res == 0 && op.Kind == OpRead:
		op.Err = io.EOF
	case c.res == 0:
		op.Err = io.ErrShortWrite
	default:
		r.stats.shortIOs.Add(1)
		return true
	}
	return false
}

// resultErrno applies a failed CQE's errno to op, and reports whether op
// must be resubmitted.
func resultErrno(op *Op, errno syscall.Errno) (retry bool) {
	switch errno {
	case unix.EINTR, unix.EAGAIN, unix.EBUSY:
		return true
	case unix.ECANCELED:
		if head := op.head; head.restart >= 0 && op.index >= head.restart {
			return true
		}
		op.Err = fmt.Errorf("%w (%s at offset %d)", ErrCanceled, op.Kind, op.Off)
	case unix.EFAULT:
		panic(fmt.Sprintf("ring: %s at offset %d: EFAULT: the kernel could not access a buffer we handed it", op.Kind, op.Off))
	case unix.EINVAL:
		if op.Kind == OpNop || op.Kind == OpFsync || op.fixed {
			panic(fmt.Sprintf("ring: %s: EINVAL from an SQE we built", op.Kind))
		}
		op.Err = errno
	default:
		op.Err = errno
	}
	return false
}

// resubmitChain queues head's chain again from the first op that must run
// again; the ops after it were canceled by the kernel and run again too,
// still linked.
func resubmitChain(rs *reactorState, head *Op) {
	o := head
	for o.index < head.restart {
		o = o.next
	}
	head.pending, head.restart = 0, -1
	for ; o != nil; o = o.next {
		head.pending++
		rs.pending = append(rs.pending, o)
	}
}

// deliverChain hands every op of head's finished chain to its caller: a
// callback, a waiter or a channel.
func (r *Ring) deliverChain(rs *reactorState, head *Op) {
	for o := head; o != nil; {
		next := o.next // o belongs to the caller once delivered
		r.stats.completed.Add(1)
		if o.then != nil && head.next == nil && o.then(o) {
			// The callback refilled the op: it goes again, keeping its
			// admission, with no trip through the queue.
			linkChains1(o)
			rs.pending = append(rs.pending, o)
			o = next
			continue
		}
		rs.completed++
		// Released before the waiter wakes: a caller whose Do has returned
		// sees the ring idle again, and its next lone call takes the direct
		// path.
		r.admitted.Add(-1)
		switch {
		case o.then != nil:
		case o.wait != nil:
			o.wait.complete()
		case o.done != nil:
			select {
			case o.done <- o:
			default:
				panic("ring: Submit's completion channel is full: it must have room for every outstanding op")
			}
		}
		o = next
	}
}
