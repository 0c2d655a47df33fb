package fusefs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
)

// What the store does not have yet answers as a Linux filesystem without
// it does, so programs take their usual fallback (docs/FUSE.md lists
// them):
//
//	mknod of a device             EPERM       (vfat; node.go's Mknod)
//	xattrs (get/set/list/remove)  EOPNOTSUPP  (a filesystem without xattrs)
//	renameat2's RENAME_WHITEOUT   EINVAL      (the store's, node.go's Rename)
//
// fallocate (node_io.go's Allocate) and renameat2's RENAME_NOREPLACE and
// RENAME_EXCHANGE are the store's own.
//
// The xattr ops answer the kernel ENOSYS: FUSE turns that
// into EOPNOTSUPP for the program and stops sending the op (fc->no_getxattr
// and the like). That matters: the kernel asks for security.capability
// before every write that could clear it, and a plain EOPNOTSUPP would
// cost a round trip each time.
var (
	_ fs.NodeGetxattrer    = (*node)(nil)
	_ fs.NodeSetxattrer    = (*node)(nil)
	_ fs.NodeListxattrer   = (*node)(nil)
	_ fs.NodeRemovexattrer = (*node)(nil)
)

func (n *node) Getxattr(context.Context, string, []byte) (uint32, syscall.Errno) {
	return 0, syscall.ENOSYS
}

func (n *node) Setxattr(context.Context, string, []byte, uint32) syscall.Errno {
	return syscall.ENOSYS
}

func (n *node) Listxattr(context.Context, []byte) (uint32, syscall.Errno) {
	return 0, syscall.ENOSYS
}

func (n *node) Removexattr(context.Context, string) syscall.Errno { return syscall.ENOSYS }
