package fusefs

import (
	"context"
	"errors"
	"syscall"
)

// Sentinel errors of a mount's preflight: each says what to do.
var (
	// ErrNoDevice: /dev/fuse is missing (no fuse module, or a container
	// started without the device).
	ErrNoDevice = errors.New("fusefs: /dev/fuse is missing: load the module (modprobe fuse) or, in a container, pass the device (--device /dev/fuse)")
	// ErrNotDir: the mount point is not a directory.
	ErrNotDir = errors.New("fusefs: not a directory")
	// ErrBusy: something is mounted on the mount point already (a live
	// mount, or a dead FUSE mount whose server is gone).
	ErrBusy = errors.New("fusefs: busy")
	// ErrNotMounted: umount of a directory that is not a mount point.
	ErrNotMounted = errors.New("fusefs: not a mount point")
)

// errnoOf maps a client error to the errno the kernel returns to the
// program. A failed request carries its errno (proto.StatusError unwraps
// to it); what is about the connection rather than the file — the
// server shutting down, a protocol error — is EIO, as a disk that went
// away; a call the kernel interrupted is EINTR.
func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	if errors.Is(err, context.Canceled) {
		return syscall.EINTR
	}
	var e syscall.Errno
	if !errors.As(err, &e) {
		return syscall.EIO
	}
	switch e {
	case syscall.ESHUTDOWN, syscall.EBADMSG, syscall.EPROTONOSUPPORT, syscall.ECANCELED:
		return syscall.EIO
	}
	return e
}

// errnoOfIno is errnoOf for a call on an inode the kernel holds: if the
// inode is gone (another client removed its last name), ESTALE, as NFS
// says. The kernel then looks the path up again (stat, open: the VFS
// retries ESTALE with LOOKUP_REVAL) and finds what the name is now.
func errnoOfIno(err error) syscall.Errno {
	if e := errnoOf(err); e != syscall.ENOENT {
		return e
	}
	return syscall.ESTALE
}
