package sysdev

import (
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"ustore/dev"

	"ustore/internal/assert"
)

// transfer moves all of b to or from offset off with sys (pread or pwrite):
// it continues short transfers, retries EINTR, retries EAGAIN up to
// eagainRetryMax times, and maps every other errno with dev.MediumError
// (Invariant 4). op names it in errors: "read" or "write".
func transfer(op string, sys func(fd int, p []byte, off int64) (int, error), fd int, b []byte, off int64) error {
	again := 0
	for len(b) > 0 {
		n, err := sys(fd, b, off)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			again++
			if again > eagainRetryMax {
				return mediumError(op, off, err)
			}
			time.Sleep(time.Duration(again) * eagainBackoff)
			continue
		case err != nil:
			return mediumError(op, off, err)
		}
		if !(n >= 0 && n <= len(b)) {
			assert.Failf("sysdev: %s of %d bytes returned %d", op, len(b), n)
		}
		switch {
		case n == 0 && op == "read":
			return fmt.Errorf("%w: read at offset %d: end of file: %w", ErrTruncated, off, dev.MediumError(op, off, unix.EIO))
		case n == 0:
			// pwrite of a non-empty buffer that moves nothing and reports
			// no error: no progress is possible, so fail rather than spin.
			return fmt.Errorf("sysdev: write at offset %d moved no bytes: %w", off, dev.MediumError(op, off, unix.EIO))
		}
		b = b[n:]
		off += int64(n)
	}
	return nil
}

// flush calls fdatasync, retried on EINTR.
func flush(fdatasync func(fd int) error, fd int) error {
	for {
		err := fdatasync(fd)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return mediumError("flush", 0, err)
		}
		return nil
	}
}

// mediumError wraps a syscall's error: an errno with dev.MediumError, so it
// matches both the errno and dev.ErrIO / dev.ErrNoSpace; anything else with
// the op and offset.
func mediumError(op string, off int64, err error) error {
	if errno, ok := err.(syscall.Errno); ok {
		return dev.MediumError(op, off, errno)
	}
	return fmt.Errorf("sysdev: %s at offset %d: %w", op, off, err)
}
