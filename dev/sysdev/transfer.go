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
		retry, err := classify(op, off, err, &again)
		if err != nil {
			return err
		}
		if retry {
			continue
		}
		if !(n >= 0 && n <= len(b)) {
			assert.Failf("sysdev: %s of %d bytes returned %d", op, len(b), n)
		}
		switch {
		case n == 0 && op == "read":
			return fmt.Errorf("%w: read at offset %d: end of file: %w", ErrTruncated, off, dev.MediumError(op, off, unix.EIO))
		case n == 0:
			return noProgress(off)
		}
		b = b[n:]
		off += int64(n)
	}
	return nil
}

// transferv writes bufs, adjacent from offset off, with sys (pwritev), as
// transfer does one buffer: a short write is continued from the byte it
// stopped at (Invariant 4). bufs is transferv's to change.
func transferv(sys func(fd int, iovs [][]byte, off int64) (int, error), fd int, bufs [][]byte, off int64) error {
	again := 0
	left := 0
	for _, b := range bufs {
		left += len(b)
	}
	for left > 0 {
		n, err := sys(fd, bufs, off)
		retry, err := classify("write", off, err, &again)
		if err != nil {
			return err
		}
		if retry {
			continue
		}
		if !(n >= 0 && n <= left) {
			assert.Failf("sysdev: write of %d bytes returned %d", left, n)
		}
		if n == 0 {
			return noProgress(off)
		}
		left -= n
		off += int64(n)
		for n > 0 {
			if n < len(bufs[0]) {
				bufs[0] = bufs[0][n:]
				break
			}
			n -= len(bufs[0])
			bufs = bufs[1:]
		}
	}
	return nil
}

// classify sorts one syscall's err: retry (EINTR, or EAGAIN while again,
// counted here, is within eagainRetryMax), an error to return, or neither
// (success).
func classify(op string, off int64, err error, again *int) (retry bool, _ error) {
	switch {
	case err == nil:
		return false, nil
	case err == unix.EINTR:
		return true, nil
	case err == unix.EAGAIN:
		*again++
		if *again > eagainRetryMax {
			return false, mediumError(op, off, err)
		}
		time.Sleep(time.Duration(*again) * eagainBackoff)
		return true, nil
	}
	return false, mediumError(op, off, err)
}

// noProgress is the error of a write of non-empty buffers that moved nothing
// and reported no error: no progress is possible, so fail rather than spin.
func noProgress(off int64) error {
	return fmt.Errorf("sysdev: write at offset %d moved no bytes: %w", off, dev.MediumError("write", off, unix.EIO))
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
