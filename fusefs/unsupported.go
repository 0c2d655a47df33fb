package fusefs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// What the store does not have yet answers as a Linux filesystem without
// it does, so programs take their usual fallback (docs/FUSE.md lists
// them):
//
//	symlink, mknod of a device    EPERM       (vfat)
//	readlink                      EINVAL      (not a symlink: there are none)
//	fallocate                     EOPNOTSUPP  (no ->fallocate: glibc's posix_fallocate writes zeros)
//	renameat2 flags               EINVAL      (node.go's Rename)
//
// fallocate answers the kernel ENOSYS: FUSE turns that into EOPNOTSUPP
// for the program and stops sending the op (fc->no_fallocate). Extended
// attributes are served (xattr.go): user.* by the store, the other
// namespaces answered without a request.
var (
	_ fs.NodeSymlinker  = (*node)(nil)
	_ fs.NodeReadlinker = (*node)(nil)
	_ fs.NodeAllocater  = (*node)(nil)
)

func (n *node) Symlink(context.Context, string, string, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

func (n *node) Readlink(context.Context) ([]byte, syscall.Errno) { return nil, syscall.EINVAL }

func (n *node) Allocate(context.Context, fs.FileHandle, uint64, uint64, uint32) syscall.Errno {
	return syscall.ENOSYS
}
