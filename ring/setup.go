package ring

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Mode says which setup flags a ring was created with.
type Mode uint8

const (
	// ModeAuto tries ModeDeferTaskrun, then ModeCoopTaskrun, then ModePlain,
	// stepping down when the kernel answers EINVAL (an unknown flag).
	ModeAuto Mode = iota
	// ModeDeferTaskrun: SINGLE_ISSUER|DEFER_TASKRUN (Linux 6.1+). Completions
	// are posted only inside the owner thread's io_uring_enter.
	ModeDeferTaskrun
	// ModeCoopTaskrun: COOP_TASKRUN|TASKRUN_FLAG (Linux 5.19+).
	ModeCoopTaskrun
	// ModePlain: no flags.
	ModePlain
)

func (m Mode) String() string {
	switch m {
	case ModeAuto:
		return "auto"
	case ModeDeferTaskrun:
		return "single-issuer+defer-taskrun"
	case ModeCoopTaskrun:
		return "coop-taskrun"
	case ModePlain:
		return "plain"
	}
	return "invalid"
}

func (m Mode) flags() uint32 {
	switch m {
	case ModeDeferTaskrun:
		return setupSingleIssuer | setupDeferTaskrun
	case ModeCoopTaskrun:
		return setupCoopTaskrun | setupTaskrunFlag
	}
	return 0
}

// requiredOps are the opcodes the ring issues; a kernel missing one is
// refused at New, not with a strange EINVAL later.
var requiredOps = [...]struct {
	op   uint8
	name string
}{
	{opNop, "NOP"}, {opReadv, "READV"}, {opWritev, "WRITEV"}, {opFsync, "FSYNC"},
	{opReadFixed, "READ_FIXED"}, {opWriteFixed, "WRITE_FIXED"},
	{opRead, "READ"}, {opWrite, "WRITE"},
}

// kernelRing is the mapped io_uring: the fd, the SQ and CQ rings and the SQE
// array. Only the reactor goroutine touches it after setup.
type kernelRing struct {
	fd       int
	mode     Mode
	features uint32

	sqRingMem, cqRingMem, sqeMem []byte

	sqHead, sqTail, sqFlags, sqDropped *uint32 // kernel-shared
	sqMask, sqEntries                  uint32
	sqArray                            []uint32
	sqes                               []sqe
	sqeTail                            uint32 // our local tail: SQEs filled

	cqHead, cqTail, cqOverflow *uint32 // kernel-shared
	cqMask, cqEntries          uint32
	cqes                       []cqe

	fixed []byte // registered region (buf_index 0), mmap'd; nil if none
}

// setupHook replaces io_uring_setup in tests that simulate an unavailable
// kernel (EPERM from the sysctl, ENOSYS from seccomp).
var setupHook func(entries uint32, p *params) (int, syscall.Errno)

func ioUringSetup(entries uint32, p *params) (int, syscall.Errno) {
	if setupHook != nil {
		return setupHook(entries, p)
	}
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(p)), 0)
	return int(fd), errno
}

// openKernelRing creates the ring. It must run on the OS thread that will
// call io_uring_enter for the ring's whole life (SINGLE_ISSUER).
func openKernelRing(cfg Config) (*kernelRing, error) {
	modes := []Mode{cfg.Mode}
	if cfg.Mode == ModeAuto {
		modes = []Mode{ModeDeferTaskrun, ModeCoopTaskrun, ModePlain}
	}
	var (
		p     params
		fd    int
		errno syscall.Errno
		mode  Mode
	)
	for _, mode = range modes {
		p = params{flags: mode.flags()}
		if cfg.CQEntries != 0 {
			p.flags |= setupCQSize
			p.cqEntries = cfg.CQEntries
		}
		fd, errno = ioUringSetup(cfg.Entries, &p)
		if errno != unix.EINVAL {
			break
		}
	}
	if errno != 0 {
		return nil, unavailable(errno)
	}
	k := &kernelRing{fd: fd, mode: mode, features: p.features}
	if err := k.mmap(&p); err != nil {
		k.close()
		return nil, err
	}
	if err := k.probe(); err != nil {
		k.close()
		return nil, err
	}
	if cfg.FixedBytes > 0 {
		if err := k.registerFixed(cfg.FixedBytes); err != nil {
			k.close()
			return nil, err
		}
	}
	return k, nil
}

// unavailable turns a setup errno into an error that says what to do.
func unavailable(errno syscall.Errno) error {
	var hint string
	switch errno {
	case unix.EPERM:
		hint = "io_uring is disabled by sysctl kernel.io_uring_disabled or blocked by a seccomp profile " +
			"(containers block it by default); enable it with 'sysctl kernel.io_uring_disabled=0' " +
			"or allow io_uring_setup in the seccomp profile"
	case unix.ENOSYS:
		hint = "the kernel has no io_uring (CONFIG_IO_URING off, or a sandbox answers ENOSYS); " +
			"a Linux 6.1+ kernel with io_uring enabled is needed"
	case unix.EINVAL:
		hint = "the kernel refused every setup flag set (too old for io_uring as used here)"
	case unix.ENOMEM:
		hint = "the kernel could not allocate the ring (memory or RLIMIT_MEMLOCK); try fewer entries"
	default:
		hint = "io_uring_setup failed"
	}
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, hint, errno)
}

func (k *kernelRing) mmap(p *params) error {
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*uint32(unsafe.Sizeof(cqe{})))
	if p.features&featSingleMmap != 0 {
		sqSize = max(sqSize, cqSize)
		cqSize = sqSize
	}
	if p.features&featNoDrop == 0 {
		// Without NODROP an overflowing CQ drops completions and waiters hang.
		return fmt.Errorf("%w: kernel lacks IORING_FEAT_NODROP (Linux 5.5+)", ErrUnavailable)
	}
	var err error
	flags := unix.MAP_SHARED | unix.MAP_POPULATE
	prot := unix.PROT_READ | unix.PROT_WRITE
	if k.sqRingMem, err = unix.Mmap(k.fd, offSQRing, sqSize, prot, flags); err != nil {
		return fmt.Errorf("ring: mmap SQ ring: %w", err)
	}
	if p.features&featSingleMmap != 0 {
		k.cqRingMem = k.sqRingMem
	} else if k.cqRingMem, err = unix.Mmap(k.fd, offCQRing, cqSize, prot, flags); err != nil {
		return fmt.Errorf("ring: mmap CQ ring: %w", err)
	}
	sqeBytes := int(p.sqEntries) * int(unsafe.Sizeof(sqe{}))
	if k.sqeMem, err = unix.Mmap(k.fd, offSQEs, sqeBytes, prot, flags); err != nil {
		return fmt.Errorf("ring: mmap SQEs: %w", err)
	}
	sq, cq := k.sqRingMem, k.cqRingMem
	k.sqHead = u32At(sq, p.sqOff.head)
	k.sqTail = u32At(sq, p.sqOff.tail)
	k.sqFlags = u32At(sq, p.sqOff.flags)
	k.sqDropped = u32At(sq, p.sqOff.dropped)
	k.sqMask = *u32At(sq, p.sqOff.ringMask)
	k.sqEntries = *u32At(sq, p.sqOff.ringEntries)
	k.sqArray = unsafe.Slice(u32At(sq, p.sqOff.array), k.sqEntries)
	k.sqes = unsafe.Slice((*sqe)(unsafe.Pointer(&k.sqeMem[0])), k.sqEntries)
	k.sqeTail = atomic.LoadUint32(k.sqTail)

	k.cqHead = u32At(cq, p.cqOff.head)
	k.cqTail = u32At(cq, p.cqOff.tail)
	k.cqOverflow = u32At(cq, p.cqOff.overflow)
	k.cqMask = *u32At(cq, p.cqOff.ringMask)
	k.cqEntries = *u32At(cq, p.cqOff.ringEntries)
	k.cqes = unsafe.Slice((*cqe)(unsafe.Pointer(&cq[p.cqOff.cqes])), k.cqEntries)
	return nil
}

func u32At(mem []byte, off uint32) *uint32 {
	return (*uint32)(unsafe.Pointer(&mem[off]))
}

func (k *kernelRing) register(opcode uintptr, arg unsafe.Pointer, nr uintptr) syscall.Errno {
	for {
		_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(k.fd), opcode, uintptr(arg), nr, 0, 0)
		if errno != unix.EINTR {
			return errno
		}
	}
}

// probe checks that the kernel supports every opcode we issue.
func (k *kernelRing) probe() error {
	buf := make([]byte, unsafe.Sizeof(probeHeader{})+probeOpsMax*unsafe.Sizeof(probeOp{}))
	if errno := k.register(registerProbe, unsafe.Pointer(&buf[0]), probeOpsMax); errno != 0 {
		return fmt.Errorf("%w: IORING_REGISTER_PROBE (Linux 5.6+) failed: %w", ErrUnavailable, errno)
	}
	hdr := (*probeHeader)(unsafe.Pointer(&buf[0]))
	ops := unsafe.Slice((*probeOp)(unsafe.Pointer(&buf[unsafe.Sizeof(probeHeader{})])), probeOpsMax)
	var missing []string
	for _, r := range requiredOps {
		if int(r.op) >= int(hdr.opsLen) || ops[r.op].flags&probeOpSupported == 0 {
			missing = append(missing, r.name)
		}
	}
	if missing != nil {
		return fmt.Errorf("%w: kernel lacks io_uring opcodes %v", ErrUnavailable, missing)
	}
	return nil
}

// registerFixed maps an anonymous, page-aligned region outside the Go heap
// (the GC never sees nor moves it) and registers it as buffer index 0.
func (k *kernelRing) registerFixed(n int) error {
	if n > fixedBytesMax || n%4096 != 0 {
		return fmt.Errorf("ring: fixed region of %d bytes: must be a multiple of 4096 up to %d", n, fixedBytesMax)
	}
	mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("ring: mmap fixed region: %w", err)
	}
	iov := unix.Iovec{Base: &mem[0]}
	iov.SetLen(n)
	if errno := k.register(registerBuffers, unsafe.Pointer(&iov), 1); errno != 0 {
		_ = unix.Munmap(mem)
		if errno == unix.ENOMEM {
			return fmt.Errorf("ring: registering %d bytes of buffers: RLIMIT_MEMLOCK too low (raise 'ulimit -l' or LimitMEMLOCK): %w", n, errno)
		}
		return fmt.Errorf("ring: IORING_REGISTER_BUFFERS: %w", errno)
	}
	k.fixed = mem
	return nil
}

func (k *kernelRing) close() {
	if k.fixed != nil {
		_ = k.register(unregisterBuffers, nil, 0)
		_ = unix.Munmap(k.fixed)
	}
	if k.sqeMem != nil {
		_ = unix.Munmap(k.sqeMem)
	}
	// With IORING_FEAT_SINGLE_MMAP the CQ shares the SQ's mapping.
	if k.cqRingMem != nil && (k.sqRingMem == nil || &k.cqRingMem[0] != &k.sqRingMem[0]) {
		_ = unix.Munmap(k.cqRingMem)
	}
	if k.sqRingMem != nil {
		_ = unix.Munmap(k.sqRingMem)
	}
	_ = unix.Close(k.fd)
}

// enter calls io_uring_enter, retrying EINTR (Go's preemption signals
// interrupt waits; EINTR means nothing was submitted by that call).
func (k *kernelRing) enter(toSubmit, minComplete uint32, flags uint32) (int, syscall.Errno) {
	for {
		n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(k.fd), uintptr(toSubmit), uintptr(minComplete), uintptr(flags), 0, 0)
		if errno != unix.EINTR {
			return int(n), errno
		}
	}
}
