package ring

import (
	"io"

	"golang.org/x/sys/unix"
)

// The lone synchronous calls. Waking the reactor — a goroutine locked to its
// OS thread — costs 11–25 µs on the VMs ustore runs on, while a pread costs
// about the device's latency; so when the ring has nothing admitted, a lone
// ReadAt, WriteAt or Fsync runs the syscall on the caller's thread (the
// "direct path") and pays no handoff. As soon as anything is in flight the
// call joins the ring, where it is batched with the others. Ordering is
// unaffected: every call is synchronous, and a later Fsync only covers
// writes that have completed. docs/design/ring.md has the
// measurements behind this choice.

// ReadAt reads len(p) bytes at off from fd. It returns io.EOF when the file
// ends first, like io.ReaderAt.
func (r *Ring) ReadAt(fd int, p []byte, off int64) (int, error) {
	if r.direct() {
		defer r.admitted.Add(-1)
		return directIO(fd, p, off, true)
	}
	op := Op{Kind: OpRead, Fd: fd, Buf: p, Off: off}
	err := r.Do(&op)
	return op.N, err
}

// WriteAt writes len(p) bytes at off to fd.
func (r *Ring) WriteAt(fd int, p []byte, off int64) (int, error) {
	if r.direct() {
		defer r.admitted.Add(-1)
		return directIO(fd, p, off, false)
	}
	op := Op{Kind: OpWrite, Fd: fd, Buf: p, Off: off}
	err := r.Do(&op)
	return op.N, err
}

// Fsync flushes fd (fdatasync when datasync is true).
func (r *Ring) Fsync(fd int, datasync bool) error {
	if r.direct() {
		defer r.admitted.Add(-1)
		for {
			var err error
			if datasync {
				err = unix.Fdatasync(fd)
			} else {
				err = unix.Fsync(fd)
			}
			if err != unix.EINTR {
				return err
			}
		}
	}
	op := Op{Kind: OpFsync, Fd: fd}
	if datasync {
		op.Flags = FlagDatasync
	}
	return r.Do(&op)
}

// direct claims the direct path: it succeeds only when nothing is admitted,
// and counts the call as admitted so that a concurrent caller joins the ring.
func (r *Ring) direct() bool {
	if r.cfg.NoDirect || !r.admitted.CompareAndSwap(0, 1) {
		return false
	}
	r.mu.Lock()
	closing := r.closing
	r.mu.Unlock()
	if closing {
		r.admitted.Add(-1)
		return false // the ring path reports ErrClosed
	}
	r.stats.direct.Add(1)
	return true
}

// directIO is pread/pwrite to completion: EINTR and EAGAIN retry, short
// transfers continue.
func directIO(fd int, p []byte, off int64, read bool) (int, error) {
	done := 0
	for done < len(p) {
		var (
			n   int
			err error
		)
		if read {
			n, err = unix.Pread(fd, p[done:], off+int64(done))
		} else {
			n, err = unix.Pwrite(fd, p[done:], off+int64(done))
		}
		switch {
		case err == unix.EINTR || err == unix.EAGAIN:
			continue
		case err != nil:
			return done, err
		case n == 0 && read:
			return done, io.EOF
		case n == 0:
			return done, io.ErrShortWrite
		}
		done += n
	}
	return done, nil
}
