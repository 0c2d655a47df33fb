package fusefs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Symbolic links: the store keeps a link's target and never follows it;
// the kernel does, asking Readlink as it walks a path (and answering
// ELOOP itself past 40 links, or for O_NOFOLLOW). A link's inode is
// S_IFLNK from its lookup on (newNode), so the kernel knows what it is.
var (
	_ fs.NodeSymlinker  = (*node)(nil)
	_ fs.NodeReadlinker = (*node)(nil)
)

// Symlink makes a link name in this directory with target as given, owned
// by the caller. A target longer than the store holds (4,037 bytes at
// 16 KiB nodes; the kernel itself refuses more than PATH_MAX − 1) is
// ENAMETOOLONG, an empty one ENOENT (the kernel checks that first).
func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	a, err := n.fsys.conn().Symlink(ctx, n.ino(), name, target)
	if err == nil {
		a, err = n.owned(ctx, a)
	}
	if err != nil {
		return nil, errnoOf(err)
	}
	return n.fsys.newNode(ctx, n.EmbeddedInode(), a, out), 0
}

// Readlink is the link's target; EINVAL for another inode (the kernel asks
// only of links).
func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	target, err := n.fsys.conn().Readlink(ctx, n.ino())
	if err != nil {
		return nil, errnoOfIno(err)
	}
	return []byte(target), 0
}
