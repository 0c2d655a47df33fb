package ring

import (
	"golang.org/x/sys/unix"
)

// OpKind is what an Op does.
type OpKind uint8

const (
	// OpNop completes at once; it measures the ring's own overhead.
	OpNop OpKind = iota + 1
	// OpRead reads len(Buf) bytes (or the total of Bufs: readv) at Off.
	OpRead
	// OpWrite writes len(Buf) bytes (or the total of Bufs: writev) at Off.
	OpWrite
	// OpFsync flushes the file (fdatasync with FlagDatasync).
	OpFsync
)

func (k OpKind) String() string {
	switch k {
	case OpNop:
		return "nop"
	case OpRead:
		return "read"
	case OpWrite:
		return "write"
	case OpFsync:
		return "fsync"
	}
	return "invalid"
}

// OpFlags modify an Op.
type OpFlags uint8

const (
	// FlagLink links this Op to the next Op of the same batch (IOSQE_IO_LINK):
	// the next starts only after this one completed in full; if this one fails
	// or is short, the rest of the chain completes with ErrCanceled. Links run
	// one after another, so never link writes that could run in parallel.
	FlagLink OpFlags = 1 << iota
	// FlagDatasync makes OpFsync an fdatasync.
	FlagDatasync
)

// There is no IOSQE_IO_DRAIN flag: the ring always keeps a read of its wake
// eventfd in flight, and a drained op waits for every earlier SQE, that read
// included, so it would wait for the next wake-up. Order a flush after
// parallel writes by waiting for them (two submissions), or link a lone write
// to its flush.

// Op is one io_uring operation. Fill Kind, Fd, Buf or Bufs, Off and Flags,
// hand it to Ring.Do or Ring.Submit, and read N and Err once it completed.
//
// Ownership: from submission until completion, the Op and its buffers belong
// to the ring; the ring keeps them reachable (its slot table holds the Op) and
// the caller must not touch them. Buffers must be heap or mmap'd memory —
// anything reachable from an Op is, since the Op itself is.
type Op struct {
	Kind  OpKind
	Flags OpFlags
	Fd    int
	Buf   []byte   // read/write buffer
	Bufs  [][]byte // vectored read/write (readv/writev) when Buf is nil
	Off   int64

	// Results.
	N   int   // bytes transferred (the whole length unless Err != nil)
	Err error // nil, an Errno from the kernel, ErrCanceled, or io.EOF for a read past the end

	// Ring-private state; touched only by the reactor between submission
	// and completion.
	done   chan<- *Op     // async completion target (Submit)
	then   func(*Op) bool // completion callback (SubmitFunc), run by the reactor
	wait   *waiter        // sync completion target (Do)
	iovecs []unix.Iovec   // readv/writev iovecs of the remaining range
	fixed  bool           // Buf lies in the registered region

	// Chains. Every op belongs to one: an unlinked op is a chain of one.
	// The head (first op) keeps the chain's bookkeeping. The members are
	// linked through next, never through the caller's slice, which the
	// caller may reuse as soon as Submit returns.
	head    *Op // first op of the chain
	next    *Op // next op of the chain, or nil
	index   int // position in the chain
	pending int // head only: CQEs of the chain still outstanding
	restart int // head only: index to resubmit from, or -1
}

// length is the total number of bytes the op transfers.
func (op *Op) length() int {
	if op.Buf != nil {
		return len(op.Buf)
	}
	n := 0
	for _, b := range op.Bufs {
		n += len(b)
	}
	return n
}

// linkChains sets up the chain bookkeeping of a validated batch.
func linkChains(ops []*Op) {
	start := 0
	for i, op := range ops {
		op.head, op.index, op.next = ops[start], i-start, nil
		if op.Flags&FlagLink != 0 {
			op.next = ops[i+1]
			continue
		}
		h := ops[start]
		h.pending, h.restart = i+1-start, -1
		start = i + 1
	}
}

// linkChains1 resets a lone op for another trip through the ring.
func linkChains1(op *Op) {
	op.head, op.next, op.index = op, nil, 0
	op.pending, op.restart = 1, -1
	op.N, op.Err = 0, nil
}
