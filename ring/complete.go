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
		rs.wakeArmed = false
		if c.res < 0 && syscall.Errno(-c.res) != unix.ECANCELED {
			panic(fmt.Sprintf("ring: eventfd read: %v", syscall.Errno(-c.res)))
		}
		return
	}
	op := rs.slots[c.userData]
	rs.slots[c.userData] = nil
	rs.free = append(rs.free, c.userData)
	rs.inKernel--

	head := op.head
	retry := false
	if c.res >= 0 {
		op.N += int(c.res)
		switch {
		case op.Kind != OpRead && op.Kind != OpWrite, op.N == op.length():
		case c.res == 0 && op.Kind == OpRead:
			op.Err = io.EOF
		case c.res == 0:
			op.Err = io.ErrShortWrite
		default:
			retry = true
			r.stats.shortIOs.Add(1)
		}
	} else {
		switch errno := syscall.Errno(-c.res); errno {
		case unix.EINTR, unix.EAGAIN, unix.EBUSY:
			retry = true
		case unix.ECANCELED:
			if head.restart >= 0 && op.index >= head.restart {
				retry = true
			} else {
				op.Err = fmt.Errorf("%w (%s at offset %d)", ErrCanceled, op.Kind, op.Off)
			}
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
	}
	if retry {
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
		// Resubmit the chain from the first op that must run again; the ops
		// after it were canceled by the kernel and run again too, still linked.
		o := head
		for o.index < head.restart {
			o = o.next
		}
		head.pending, head.restart = 0, -1
		for ; o != nil; o = o.next {
			head.pending++
			rs.pending = append(rs.pending, o)
		}
		return
	}
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
