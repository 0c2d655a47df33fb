package sysdev

import "time"

const (
	// workersDefault is the pool size when Options.Workers is 0: enough
	// parallel syscalls to keep an NVMe queue busy with 4 KiB IOs, few
	// enough that the blocked OS threads cost little.
	workersDefault = 32
	// workersMax bounds Options.Workers: each worker may hold an OS thread
	// blocked in a syscall, and the runtime's thread limit is 10000.
	workersMax = 1024
	// writevIOsMax bounds the IOs one pwritev carries (the kernel's
	// UIO_MAXIOV is 1024); 64 node-sized writes are 1 MiB at 16 KiB.
	writevIOsMax = 64
	// eagainRetryMax bounds the retries of a pread/pwrite that returns
	// EAGAIN, which a regular file or block device should never do: past it
	// the errno goes to the caller rather than spinning forever.
	eagainRetryMax = 100
	// eagainBackoff is the pause before EAGAIN retry n, times n.
	eagainBackoff = 10 * time.Microsecond
)
