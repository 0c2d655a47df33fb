package fusefs

import (
	"context"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"

	"ustore/proto"
)

// Extended attributes: the store's user namespace, one request per call.
// Names of the other namespaces are answered here, without a request, as
// a filesystem that keeps none of them: a set or remove EOPNOTSUPP, a get
// ENODATA for the kernel's own namespaces (security, trusted, system) and
// EOPNOTSUPP for one Linux does not know. The kernel asks for
// security.capability before every write of a file (file_remove_privs):
// that probe is answered here, costing the kernel's round trip to the
// mount but no request to the server (docs/BENCHMARKS.md, "FUSE
// xattrs"). HANDLE_KILLPRIV_V2 would spare it, but hands the clearing of
// suid and sgid on write, truncate and chown to the filesystem, and
// go-fuse's node API does not pass a write's kill flag: not negotiated.
var (
	_ fs.NodeGetxattrer    = (*node)(nil)
	_ fs.NodeSetxattrer    = (*node)(nil)
	_ fs.NodeListxattrer   = (*node)(nil)
	_ fs.NodeRemovexattrer = (*node)(nil)
)

const xattrUserPrefix = "user."

// foreignXattr is the answer to name when it is not of the user
// namespace (get: for a getxattr), 0 when it is.
func foreignXattr(name string, get bool) syscall.Errno {
	switch {
	case strings.HasPrefix(name, xattrUserPrefix):
		return 0
	case get && (strings.HasPrefix(name, "security.") || strings.HasPrefix(name, "trusted.") || strings.HasPrefix(name, "system.")):
		return syscall.ENODATA
	}
	return syscall.EOPNOTSUPP
}

// xattrBuffer is the size a kernel buffer of n bytes asks the server for:
// the kernel never passes more than XATTR_SIZE_MAX, the wire's bound.
func xattrBuffer(n int) uint32 { return uint32(min(n, proto.XattrSizeMax)) }

func (n *node) Getxattr(ctx context.Context, name string, dest []byte) (uint32, syscall.Errno) {
	if e := foreignXattr(name, true); e != 0 {
		return 0, e
	}
	r, err := n.fsys.conn().GetXattr(ctx, n.ino(), name, xattrBuffer(len(dest)))
	if err != nil {
		return 0, errnoOfIno(err)
	}
	return xattrAnswer(r, dest)
}

// xattrAnswer is the kernel's answer from r for a buffer dest: the size
// alone when dest is empty (the caller asked for it), else the data
// copied. The server answered ERANGE for a dest too small.
func xattrAnswer(r proto.XattrReply, dest []byte) (uint32, syscall.Errno) {
	if len(dest) == 0 {
		return r.Size, 0
	}
	return uint32(copy(dest, r.Data)), 0
}

func (n *node) Setxattr(ctx context.Context, name string, value []byte, flags uint32) syscall.Errno {
	if e := foreignXattr(name, false); e != 0 {
		return e
	}
	return errnoOfIno(n.fsys.conn().SetXattr(ctx, n.ino(), name, value, flags))
}

func (n *node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	r, err := n.fsys.conn().ListXattr(ctx, n.ino(), xattrBuffer(len(dest)))
	if err != nil {
		return 0, errnoOfIno(err)
	}
	return xattrAnswer(r, dest)
}

func (n *node) Removexattr(ctx context.Context, name string) syscall.Errno {
	if e := foreignXattr(name, false); e != 0 {
		return e
	}
	return errnoOfIno(n.fsys.conn().RemoveXattr(ctx, n.ino(), name))
}
