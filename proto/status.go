package proto

import (
	"context"
	"errors"
	"strconv"
	"syscall"
)

// Status is a response's outcome: OK or an errno-like failure. The values
// are the protocol's own, not Linux errno numbers (those differ between
// architectures); Errno and StatusFromErrno translate. A status not in this
// table is malformed: new statuses come with a new protocol version.
type Status uint16

// The statuses of version 1. Never renumber one: the values are the wire.
const (
	StatusOK           Status = 0
	StatusNotExist     Status = 1  // ENOENT
	StatusExist        Status = 2  // EEXIST
	StatusNotDir       Status = 3  // ENOTDIR
	StatusIsDir        Status = 4  // EISDIR
	StatusNotEmpty     Status = 5  // ENOTEMPTY
	StatusNameTooLong  Status = 6  // ENAMETOOLONG
	StatusInvalid      Status = 7  // EINVAL
	StatusFileTooBig   Status = 8  // EFBIG
	StatusNoSpace      Status = 9  // ENOSPC
	StatusIO           Status = 10 // EIO: device errors, corruption, anything unmapped
	StatusPerm         Status = 11 // EPERM
	StatusTooManyLinks Status = 12 // EMLINK
	StatusReadOnly     Status = 13 // EROFS
	StatusLoop         Status = 14 // ELOOP
	StatusAccess       Status = 15 // EACCES; in a hello reply: the peer is not allowed
	StatusCanceled     Status = 16 // ECANCELED: the server gave the request up
	StatusTimedOut     Status = 17 // ETIMEDOUT: a server-side deadline passed
	StatusBusy         Status = 18 // EBUSY: hello reply only: too many connections of the peer's uid
	StatusNoSys        Status = 19 // ENOSYS: unknown op code
	StatusBadMessage   Status = 20 // EBADMSG: protocol error; the server closes
	StatusVersion      Status = 21 // EPROTONOSUPPORT: no common protocol version
	StatusShutdown     Status = 22 // ESHUTDOWN: the server is shutting down
	StatusOverflow     Status = 23 // EOVERFLOW: the name's hash chain in the directory is full
	StatusNoData       Status = 24 // ENODATA: no such extended attribute
	StatusRange        Status = 25 // ERANGE: the caller's buffer is too small for the value
	StatusTooBig       Status = 26 // E2BIG: an extended attribute's value is too large
	StatusNotSupported Status = 27 // EOPNOTSUPP: a mode or namespace the store does not support
	StatusBadHandle    Status = 28 // EBADF: no such open-file handle on this connection
	StatusTooManyOpen  Status = 29 // EMFILE: the connection holds its limit of handles

	statusCount = 30
)

var statusErrno = [statusCount]syscall.Errno{
	StatusOK:           0,
	StatusNotExist:     syscall.ENOENT,
	StatusExist:        syscall.EEXIST,
	StatusNotDir:       syscall.ENOTDIR,
	StatusIsDir:        syscall.EISDIR,
	StatusNotEmpty:     syscall.ENOTEMPTY,
	StatusNameTooLong:  syscall.ENAMETOOLONG,
	StatusInvalid:      syscall.EINVAL,
	StatusFileTooBig:   syscall.EFBIG,
	StatusNoSpace:      syscall.ENOSPC,
	StatusIO:           syscall.EIO,
	StatusPerm:         syscall.EPERM,
	StatusTooManyLinks: syscall.EMLINK,
	StatusReadOnly:     syscall.EROFS,
	StatusLoop:         syscall.ELOOP,
	StatusAccess:       syscall.EACCES,
	StatusCanceled:     syscall.ECANCELED,
	StatusTimedOut:     syscall.ETIMEDOUT,
	StatusBusy:         syscall.EBUSY,
	StatusNoSys:        syscall.ENOSYS,
	StatusBadMessage:   syscall.EBADMSG,
	StatusVersion:      syscall.EPROTONOSUPPORT,
	StatusShutdown:     syscall.ESHUTDOWN,
	StatusOverflow:     syscall.EOVERFLOW,
	StatusNoData:       syscall.ENODATA,
	StatusRange:        syscall.ERANGE,
	StatusTooBig:       syscall.E2BIG,
	StatusNotSupported: syscall.EOPNOTSUPP,
	StatusBadHandle:    syscall.EBADF,
	StatusTooManyOpen:  syscall.EMFILE,
}

var statusNames = [statusCount]string{
	"OK", "ENOENT", "EEXIST", "ENOTDIR", "EISDIR", "ENOTEMPTY", "ENAMETOOLONG",
	"EINVAL", "EFBIG", "ENOSPC", "EIO", "EPERM", "EMLINK", "EROFS", "ELOOP",
	"EACCES", "ECANCELED", "ETIMEDOUT", "EBUSY", "ENOSYS", "EBADMSG",
	"EPROTONOSUPPORT", "ESHUTDOWN", "EOVERFLOW", "ENODATA", "ERANGE", "E2BIG",
	"EOPNOTSUPP", "EBADF", "EMFILE",
}

// Known reports whether s is a status of this protocol version.
func (s Status) Known() bool { return s < statusCount }

// String is the errno's name ("ENOENT"), "OK", or "status(N)".
func (s Status) String() string {
	if s.Known() {
		return statusNames[s]
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}

// Errno is the errno s stands for: 0 for OK, EIO for an unknown status.
// The client returns it (wrapped), so that errors.Is(err, fs.ErrNotExist)
// and errors.Is(err, syscall.ENOENT) work on a remote error.
func (s Status) Errno() syscall.Errno {
	if !s.Known() {
		return syscall.EIO
	}
	return statusErrno[s]
}

// StatusFromErrno is the status that carries errno e: StatusOK for 0, and
// StatusIO for an errno the protocol has no status for (the message still
// carries its text).
func StatusFromErrno(e syscall.Errno) Status {
	for s, en := range statusErrno {
		if en == e {
			return Status(s)
		}
	}
	return StatusIO
}

// StatusOf is the status a server sends for err: StatusBadMessage for a
// malformed frame, StatusNoSys for an unknown op, StatusVersion for a failed
// handshake, the status of an errno that err wraps (the store's errors are
// *fs.PathError around a syscall.Errno), StatusCanceled and StatusTimedOut
// for the context errors, and StatusIO for anything else.
func StatusOf(err error) Status {
	var en syscall.Errno
	var se *StatusError
	switch {
	case err == nil:
		return StatusOK
	case errors.Is(err, ErrMalformed):
		return StatusBadMessage
	case errors.Is(err, ErrUnknownOp):
		return StatusNoSys
	case errors.Is(err, ErrVersion):
		return StatusVersion
	case errors.As(err, &se):
		return se.Status
	case errors.As(err, &en):
		return StatusFromErrno(en)
	case errors.Is(err, context.Canceled):
		return StatusCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return StatusTimedOut
	default:
		return StatusIO
	}
}
