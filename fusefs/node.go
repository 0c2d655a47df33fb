package fusefs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"ustore/proto"
)

// node is one store inode as the kernel sees it. It holds no state of its
// own: the store is the truth, asked at every call the kernel makes (and
// the kernel caches what it may, doc.go "Kernel caching"). Its inode
// number is go-fuse's StableAttr.Ino.
type node struct {
	fs.Inode
	fsys *FS
}

// The namespace operations: every one the store has.
var (
	_ fs.NodeLookuper       = (*node)(nil)
	_ fs.NodeGetattrer      = (*node)(nil)
	_ fs.NodeSetattrer      = (*node)(nil)
	_ fs.NodeMkdirer        = (*node)(nil)
	_ fs.NodeMknoder        = (*node)(nil)
	_ fs.NodeCreater        = (*node)(nil)
	_ fs.NodeUnlinker       = (*node)(nil)
	_ fs.NodeRmdirer        = (*node)(nil)
	_ fs.NodeRenamer        = (*node)(nil)
	_ fs.NodeLinker         = (*node)(nil)
	_ fs.NodeOpendirHandler = (*node)(nil)
	_ fs.NodeStatfser       = (*node)(nil)
)

func (n *node) ino() uint64 { return n.StableAttr().Ino }

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	a, err := n.fsys.conn().Lookup(ctx, n.ino(), name)
	if err != nil {
		return nil, errnoOf(err)
	}
	return n.fsys.newNode(ctx, n.EmbeddedInode(), a, out), 0
}

func (n *node) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	a, err := n.fsys.conn().Stat(ctx, n.ino())
	if err != nil {
		return errnoOfIno(err)
	}
	fillAttr(&out.Attr, &a)
	return 0
}

// Setattr maps chmod, chown, truncate and utimens (UTIME_NOW arrives as
// the time now, UTIME_OMIT as a bit left clear) to one store setattr.
// What the store has no field for — ctime set explicitly, a file handle's
// lock owner — is left out: the store sets ctime itself.
func (n *node) Setattr(ctx context.Context, _ fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	var req proto.SetAttr
	if m, ok := in.GetMode(); ok {
		req.Mask |= proto.SetMode
		req.Mode = m & 07777
	}
	if u, ok := in.GetUID(); ok {
		req.Mask |= proto.SetUID
		req.UID = u
	}
	if g, ok := in.GetGID(); ok {
		req.Mask |= proto.SetGID
		req.GID = g
	}
	if s, ok := in.GetSize(); ok {
		req.Mask |= proto.SetSize
		req.Size = s
	}
	if t, ok := in.GetATime(); ok {
		req.Mask |= proto.SetAtime
		req.Atime = proto.TimespecOf(t)
	}
	if t, ok := in.GetMTime(); ok {
		req.Mask |= proto.SetMtime
		req.Mtime = proto.TimespecOf(t)
	}
	c := n.fsys.conn()
	var a proto.Attr
	var err error
	if req.Mask == 0 {
		a, err = c.Stat(ctx, n.ino()) // e.g. a ctime-only change: answer the attributes
	} else {
		a, err = c.SetAttr(ctx, n.ino(), req)
	}
	if err != nil {
		return errnoOfIno(err)
	}
	fillAttr(&out.Attr, &a)
	return 0
}

// owned gives a new inode to the caller: the store makes it the server's
// uid and gid, and a mount shared by several users (allow_other) must show
// each file as its creator's, as a local filesystem does. When the caller
// is the server's user, as usual, nothing is sent.
func (n *node) owned(ctx context.Context, a proto.Attr) (proto.Attr, error) {
	caller, ok := fuse.FromContext(ctx)
	if !ok || (caller.Uid == a.UID && caller.Gid == a.GID) {
		return a, nil
	}
	return n.fsys.conn().SetAttr(ctx, a.Ino, proto.SetAttr{Mask: proto.SetUID | proto.SetGID, UID: caller.Uid, GID: caller.Gid})
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	a, err := n.fsys.conn().Mkdir(ctx, n.ino(), name, mode&07777)
	if err == nil {
		a, err = n.owned(ctx, a)
	}
	if err != nil {
		return nil, errnoOf(err)
	}
	return n.fsys.newNode(ctx, n.EmbeddedInode(), a, out), 0
}

// Mknod makes regular files only (mknod(2) with S_IFREG, as some programs
// create files): the store has no device, FIFO or socket inodes, and a
// Linux filesystem without them (vfat) answers EPERM.
func (n *node) Mknod(ctx context.Context, name string, mode, _ uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, syscall.EPERM
	}
	a, err := n.fsys.conn().Create(ctx, n.ino(), name, mode&07777)
	if err == nil {
		a, err = n.owned(ctx, a)
	}
	if err != nil {
		return nil, errnoOf(err)
	}
	return n.fsys.newNode(ctx, n.EmbeddedInode(), a, out), 0
}

// Create is open(O_CREAT) of a name the kernel did not find. Another
// client may have made it meanwhile: without O_EXCL that is an open of the
// existing file (truncated with O_TRUNC), as open(2) says.
func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	c := n.fsys.conn()
	a, err := c.Create(ctx, n.ino(), name, mode&07777)
	switch {
	case err == nil:
		a, err = n.owned(ctx, a)
	case errnoOf(err) == syscall.EEXIST && flags&syscall.O_EXCL == 0:
		a, err = c.Lookup(ctx, n.ino(), name)
		if err == nil && a.IsDir() {
			return nil, nil, 0, syscall.EISDIR
		}
		if err == nil && flags&syscall.O_TRUNC != 0 && a.Size != 0 {
			a, err = c.SetAttr(ctx, a.Ino, proto.SetAttr{Mask: proto.SetSize})
		}
	}
	if err != nil {
		return nil, nil, 0, errnoOf(err)
	}
	// Released by Release. Another client may have removed the file
	// since: as Open, ESTALE.
	if held, err := n.fsys.open.opened(ctx, a.Ino); err != nil {
		return nil, nil, 0, errnoOfIno(err)
	} else if held != nil {
		a = *held
	}
	return n.fsys.newNode(ctx, n.EmbeddedInode(), a, out), &fileHandle{ino: a.Ino}, n.fsys.openFlags(), 0
}

// Unlink removes a name. A file open here stays usable after its last
// name goes: the mount holds it open on the server (open_files.go).
func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	return errnoOf(n.fsys.conn().Unlink(ctx, n.ino(), name))
}

// OnForget: the kernel has forgotten the inode (open_files.go's pin).
func (n *node) OnForget() { n.fsys.open.unpin(context.Background(), n.ino()) }

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	return errnoOf(n.fsys.conn().Rmdir(ctx, n.ino(), name))
}

// Rename is rename(2) and renameat2(2). RENAME_NOREPLACE and
// RENAME_EXCHANGE go to the store's rename2, which decides them under its
// locks (the kernel's own check of NOREPLACE sees only its cache); any
// other flag is the store's EINVAL, as a Linux filesystem without it
// answers. Neither drops the inode the new name named, so only a plain
// rename pins it (open_files.go): a regular file only, the one kind the
// store opens.
func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	dst := newParent.EmbeddedInode().StableAttr().Ino
	if flags != 0 {
		return errnoOf(n.fsys.conn().Rename2(ctx, n.ino(), name, dst, newName, flags))
	}
	// The file renamed over, if the kernel knows it, is held until the
	// kernel forgets it (open_files.go, pin).
	done := func(bool) {}
	if child := newParent.EmbeddedInode().GetChild(newName); child != nil && child.Mode()&syscall.S_IFMT == syscall.S_IFREG {
		done = n.fsys.open.pin(ctx, child.StableAttr().Ino)
	}
	err := n.fsys.conn().Rename(ctx, n.ino(), name, dst, newName)
	done(err == nil)
	return errnoOf(err)
}

func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	a, err := n.fsys.conn().Link(ctx, target.EmbeddedInode().StableAttr().Ino, n.ino(), name)
	if err != nil {
		return nil, errnoOf(err)
	}
	return n.fsys.newNode(ctx, n.EmbeddedInode(), a, out), 0
}

// OpendirHandle opens a listing (dir_handle.go). A file's open is ENOTDIR
// before it comes here: the kernel checks the type it was given.
func (n *node) OpendirHandle(ctx context.Context, _ uint32) (fs.FileHandle, uint32, syscall.Errno) {
	parent := n.ino()
	if _, p := n.Parent(); p != nil {
		parent = p.StableAttr().Ino
	}
	return &dirHandle{fsys: n.fsys, dir: n.ino(), parent: parent}, 0, 0
}

// Statfs reports the store's space in its blocks.
func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	s, err := n.fsys.conn().StatFS(ctx)
	if err != nil {
		return errnoOf(err)
	}
	out.Bsize, out.Frsize, out.NameLen = s.BlockSize, s.BlockSize, s.NameMax
	out.Blocks, out.Bfree, out.Bavail = s.Blocks, s.BlocksFree, s.BlocksAvail
	return 0
}
