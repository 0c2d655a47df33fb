package fusefs

// What the store does not have yet answers as a Linux filesystem without
// it does, so programs take their usual fallback (docs/FUSE.md lists
// them):
//
//	mknod of a device             EPERM       (vfat; node.go's Mknod)
//	renameat2's RENAME_WHITEOUT   EINVAL      (the store's, node.go's Rename)
//
// fallocate (node_io.go's Allocate), renameat2's RENAME_NOREPLACE and
// RENAME_EXCHANGE, symbolic links (node_symlink.go) and extended
// attributes (xattr.go: user.* by the store, the other namespaces
// answered without a request) are the store's own.
