package fusefs

import (
	"context"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"ustore/client"
	"ustore/proto"
)

// Options are a mount's choices: the kernel's caching (doc.go, "Kernel
// caching").
type Options struct {
	// AttrTimeout and EntryTimeout: how long the kernel trusts
	// attributes and names (nil: the defaults; 0: ask every time).
	AttrTimeout, EntryTimeout *time.Duration
	// WritebackCache lets the kernel buffer writes and send them in
	// larger pieces later (at fsync, close, or under memory pressure).
	WritebackCache bool
	// KeepCache keeps a file's cached pages across opens (FOPEN_KEEP_CACHE).
	KeepCache bool
	// Debug logs every FUSE request.
	Debug bool
}

// FS is a mounted store: the connections, and the choices that every node
// reads. Nodes hold a pointer to it; it never changes after Mount.
type FS struct {
	conns     []*client.Client
	next      atomic.Uint64
	keepCache bool
	open      *openFiles
}

// conn picks the connection for a request, round robin: requests of one
// file may go over different connections, which is safe because the
// kernel orders what must be ordered (it waits for a write's reply
// before a read of the same range, holds the inode lock across a write).
func (f *FS) conn() *client.Client {
	return f.conns[f.next.Add(1)%uint64(len(f.conns))]
}

// close closes every connection.
func (f *FS) close() {
	for _, c := range f.conns {
		c.Close()
	}
}

// newNode makes the kernel's inode for a, a child of parent, with a's
// attributes in out. The same store inode (a hard link's second name) gets
// the same Inode: go-fuse keys inodes by StableAttr.Ino.
func (f *FS) newNode(ctx context.Context, parent *fs.Inode, a proto.Attr, out *fuse.EntryOut) *fs.Inode {
	fillAttr(&out.Attr, &a)
	return parent.NewInode(ctx, &node{fsys: f}, fs.StableAttr{Mode: a.Mode & syscall.S_IFMT, Ino: a.Ino, Gen: a.Generation})
}

// fillAttr copies a store inode's attributes into the kernel's.
func fillAttr(out *fuse.Attr, a *proto.Attr) {
	out.Ino = a.Ino
	out.Mode = a.Mode
	out.Nlink = a.Nlink
	out.Owner = fuse.Owner{Uid: a.UID, Gid: a.GID}
	out.Size = a.Size
	// proto counts bytes allocated; st_blocks counts 512-byte units.
	out.Blocks = (a.Blocks + 511) / 512
	out.Blksize = blockSize
	out.Atime, out.Atimensec = uint64(a.Atime.Sec), a.Atime.Nsec
	out.Mtime, out.Mtimensec = uint64(a.Mtime.Sec), a.Mtime.Nsec
	out.Ctime, out.Ctimensec = uint64(a.Ctime.Sec), a.Ctime.Nsec
}

// blockSize is st_blksize: the store's block, the best size for I/O.
const blockSize = 4096
