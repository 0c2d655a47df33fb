package fusefs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// fsyncDatasync is FUSE_FSYNC_FDATASYNC, fsync's flag for fdatasync(2).
const fsyncDatasync = 1 << 0

// The file operations. The store reads and writes by inode, so an open
// is a hold on the server, counted here (open_files.go), and a choice of
// caching; go-fuse calls the node's Read and Write with the handle, which
// holds nothing.

// fileHandle is an open file description's handle: go-fuse sends the
// release only for an open that returned one.
type fileHandle struct{ ino uint64 }

var (
	_ fs.NodeOpener    = (*node)(nil)
	_ fs.NodeReader    = (*node)(nil)
	_ fs.NodeWriter    = (*node)(nil)
	_ fs.NodeFsyncer   = (*node)(nil)
	_ fs.NodeFlusher   = (*node)(nil)
	_ fs.NodeReleaser  = (*node)(nil)
	_ fs.NodeAllocater = (*node)(nil)
)

// openFlags are the FOPEN_ flags of every open: FOPEN_KEEP_CACHE when the
// mount keeps pages across opens.
func (f *FS) openFlags() uint32 {
	if f.keepCache {
		return fuse.FOPEN_KEEP_CACHE
	}
	return 0
}

// Open takes the inode's handle on the server, or counts one more open of
// it (open_files.go): the inode must still exist (another client may have
// removed it since the kernel looked it up: ESTALE, and the kernel looks
// the name up again), and stays usable until the last release, whatever
// happens to its names. O_TRUNC came before it as a setattr of the size
// (the mount does not take FUSE_ATOMIC_O_TRUNC), and O_APPEND's offsets
// are the kernel's: it holds the inode's lock across a write and knows
// the size, so appends through one mount are atomic.
func (n *node) Open(ctx context.Context, _ uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if _, err := n.fsys.open.opened(ctx, n.ino()); err != nil {
		return nil, 0, errnoOfIno(err)
	}
	return &fileHandle{ino: n.ino()}, n.fsys.openFlags(), 0
}

func (n *node) Read(ctx context.Context, _ fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	got, err := n.fsys.conn().Read(ctx, n.ino(), uint64(off), dest)
	if err != nil {
		return nil, errnoOfIno(err)
	}
	return fuse.ReadResultData(dest[:got]), 0
}

func (n *node) Write(ctx context.Context, _ fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	done, err := n.fsys.conn().Write(ctx, n.ino(), uint64(off), data)
	if err != nil && done == 0 {
		return 0, errnoOfIno(err)
	}
	return uint32(done), 0 // a short write: the program writes the rest, and learns why
}

// Fsync is fsync(2) and fdatasync(2): the store makes the inode durable
// (a new file's name too) with its log tree, without a full commit.
func (n *node) Fsync(ctx context.Context, _ fs.FileHandle, flags uint32) syscall.Errno {
	return errnoOfIno(n.fsys.conn().Fsync(ctx, n.ino(), flags&fsyncDatasync != 0))
}

// Allocate is fallocate(2): the store allocates (mode 0, KEEP_SIZE) or
// punches (PUNCH_HOLE|KEEP_SIZE), and answers EOPNOTSUPP for the other
// modes, as a Linux filesystem without them. The kernel drops its cached
// pages of a punched range and updates the size it knows itself
// (fuse_file_fallocate). An offset or length past 2^63 the kernel refuses
// before it comes here.
func (n *node) Allocate(ctx context.Context, _ fs.FileHandle, off, size uint64, mode uint32) syscall.Errno {
	_, err := n.fsys.conn().Fallocate(ctx, n.ino(), mode, off, size)
	return errnoOfIno(err)
}

// Flush runs at every close(2). Nothing is buffered here (the kernel
// writes its own dirty pages back before it flushes, with the writeback
// cache), and close does not promise durability: nothing to do.
func (n *node) Flush(context.Context, fs.FileHandle) syscall.Errno { return 0 }

// Release is the last close of an open file description: the end of
// what Open or Create counted.
func (n *node) Release(ctx context.Context, _ fs.FileHandle) syscall.Errno {
	n.fsys.open.released(ctx, n.ino())
	return 0
}
