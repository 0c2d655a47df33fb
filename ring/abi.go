package ring

import "unsafe"

// The io_uring ABI, written by hand from <linux/io_uring.h>: golang.org/x/sys
// gives only the three syscall numbers. Every size and offset below is checked
// at compile time (the array-length tricks at the bottom) and by TestABI_Layout.

// Setup flags (io_uring_params.flags).
const (
	setupCQSize       = 1 << 3
	setupClamp        = 1 << 4
	setupSubmitAll    = 1 << 7
	setupCoopTaskrun  = 1 << 8
	setupTaskrunFlag  = 1 << 9
	setupSingleIssuer = 1 << 12
	setupDeferTaskrun = 1 << 13
)

// Feature bits (io_uring_params.features).
const (
	featSingleMmap = 1 << 0
	featNoDrop     = 1 << 1
)

// io_uring_enter flags.
const (
	enterGetEvents = 1 << 0
)

// sq_ring->flags, written by the kernel.
const (
	sqNeedWakeup = 1 << 0
	sqCQOverflow = 1 << 1
	sqTaskrun    = 1 << 2
)

// SQE flags.
const (
	sqeIOLink = 1 << 2
)

// Opcodes used here (the kernel's enum io_uring_op).
const (
	opNop        = 0
	opReadv      = 1
	opWritev     = 2
	opFsync      = 3
	opReadFixed  = 4
	opWriteFixed = 5
	opRead       = 22
	opWrite      = 23
)

// fsync_flags.
const fsyncDatasync = 1 << 0

// io_uring_register opcodes.
const (
	registerBuffers   = 0
	unregisterBuffers = 1
	registerProbe     = 8
)

// Offsets of the three mmap regions.
const (
	offSQRing = 0
	offCQRing = 0x8000000
	offSQEs   = 0x10000000
)

// probeOpSupported is io_uring_probe_op.flags' "supported" bit.
const probeOpSupported = 1 << 0

// sqe is struct io_uring_sqe (64 bytes).
type sqe struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	opFlags     uint32 // rw_flags, fsync_flags, ...
	userData    uint64
	bufIndex    uint16
	personality uint16
	spliceFdIn  int32
	addr3       uint64
	_           uint64
}

// cqe is struct io_uring_cqe (16 bytes; we never set CQE32).
type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

type sqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// params is struct io_uring_params (120 bytes).
type params struct {
	sqEntries    uint32
	cqEntries    uint32
	flags        uint32
	sqThreadCPU  uint32
	sqThreadIdle uint32
	features     uint32
	wqFd         uint32
	resv         [3]uint32
	sqOff        sqringOffsets
	cqOff        cqringOffsets
}

// probeHeader is struct io_uring_probe without its flexible array.
type probeHeader struct {
	lastOp uint8
	opsLen uint8
	resv   uint16
	resv2  [3]uint32
}

// probeOp is struct io_uring_probe_op.
type probeOp struct {
	op    uint8
	resv  uint8
	flags uint16
	resv2 uint32
}

// Compile-time layout assertions: a wrong size makes one of these array
// lengths negative.
var (
	_ [64 - unsafe.Sizeof(sqe{})]struct{}
	_ [unsafe.Sizeof(sqe{}) - 64]struct{}
	_ [16 - unsafe.Sizeof(cqe{})]struct{}
	_ [unsafe.Sizeof(cqe{}) - 16]struct{}
	_ [120 - unsafe.Sizeof(params{})]struct{}
	_ [unsafe.Sizeof(params{}) - 120]struct{}
	_ [40 - unsafe.Sizeof(sqringOffsets{})]struct{}
	_ [unsafe.Sizeof(cqringOffsets{}) - 40]struct{}
	_ [16 - unsafe.Sizeof(probeHeader{})]struct{}
	_ [8 - unsafe.Sizeof(probeOp{})]struct{}
)
