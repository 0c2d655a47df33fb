package client

import (
	"context"

	"ustore/proto"
)

// RootIno is the root directory's inode number.
const RootIno = 256

// The methods below are the protocol's ops, one request each (Write, Read,
// Put and Get, which may take several, are in stream.go). Each returns a
// *proto.StatusError for a failed request.

// Lookup returns the attributes of name in directory dir.
func (c *Client) Lookup(ctx context.Context, dir uint64, name string) (proto.Attr, error) {
	return c.doAttr(ctx, &proto.Lookup{Dir: dir, Name: name})
}

// Create makes a regular file name in dir with permission bits perm
// (07777); EEXIST if the name exists.
func (c *Client) Create(ctx context.Context, dir uint64, name string, perm uint32) (proto.Attr, error) {
	return c.doAttr(ctx, &proto.Create{Dir: dir, Name: name, Perm: perm})
}

// Mkdir makes a directory name in dir with permission bits perm.
func (c *Client) Mkdir(ctx context.Context, dir uint64, name string, perm uint32) (proto.Attr, error) {
	return c.doAttr(ctx, &proto.Mkdir{Dir: dir, Name: name, Perm: perm})
}

// Link gives inode ino the name name in dir.
func (c *Client) Link(ctx context.Context, ino, dir uint64, name string) (proto.Attr, error) {
	return c.doAttr(ctx, &proto.Link{Ino: ino, Dir: dir, Name: name})
}

// Unlink removes name, a non-directory, from dir.
func (c *Client) Unlink(ctx context.Context, dir uint64, name string) error {
	return c.doEmpty(ctx, &proto.Unlink{Dir: dir, Name: name})
}

// Rmdir removes name, an empty directory, from dir.
func (c *Client) Rmdir(ctx context.Context, dir uint64, name string) error {
	return c.doEmpty(ctx, &proto.Rmdir{Dir: dir, Name: name})
}

// Rename moves srcName in srcDir to dstName in dstDir, replacing what
// dstName named (as rename(2)).
func (c *Client) Rename(ctx context.Context, srcDir uint64, srcName string, dstDir uint64, dstName string) error {
	return c.doEmpty(ctx, &proto.Rename{SrcDir: srcDir, SrcName: srcName, DstDir: dstDir, DstName: dstName})
}

// Rename2 is Rename with renameat2's flags: proto.RenameNoReplace fails
// with EEXIST if dstName exists, proto.RenameExchange swaps two existing
// names (ENOENT if either is missing); both, or another flag, are EINVAL.
func (c *Client) Rename2(ctx context.Context, srcDir uint64, srcName string, dstDir uint64, dstName string, flags uint32) error {
	return c.doEmpty(ctx, &proto.Rename2{Rename: proto.Rename{SrcDir: srcDir, SrcName: srcName, DstDir: dstDir, DstName: dstName}, Flags: flags})
}

// ReadDir lists up to n entries of directory dir after cookie (0: from the
// start), in creation order; n is at least 1 and at most
// proto.ReadDirEntriesMax (more is cut to it). Fewer than n means the end;
// resume with the last entry's Cookie.
func (c *Client) ReadDir(ctx context.Context, dir, cookie uint64, n int) ([]proto.DirEntry, error) {
	n = min(max(n, 0), proto.ReadDirEntriesMax)
	rep, buf, err := c.do(ctx, &proto.ReadDir{Dir: dir, Cookie: cookie, Max: uint32(n)})
	if err != nil {
		return nil, err
	}
	proto.PutBuffer(buf) // entries' names are strings: copies
	return rep.(*proto.ReadDirReply).Entries, nil
}

// Stat returns inode ino's attributes.
func (c *Client) Stat(ctx context.Context, ino uint64) (proto.Attr, error) {
	return c.doAttr(ctx, &proto.Stat{Ino: ino})
}

// SetAttr changes the attributes of inode ino that a.Mask names (a.Ino is
// ignored) and returns them all.
func (c *Client) SetAttr(ctx context.Context, ino uint64, a proto.SetAttr) (proto.Attr, error) {
	a.Ino = ino
	return c.doAttr(ctx, &a)
}

// Truncate sets file ino's size.
func (c *Client) Truncate(ctx context.Context, ino, size uint64) error {
	_, err := c.SetAttr(ctx, ino, proto.SetAttr{Mask: proto.SetSize, Size: size})
	return err
}

// Fallocate allocates or frees file ino's blocks in [off, off+length), as
// fallocate(2): mode 0 allocates and grows the file, proto.FallocKeepSize
// allocates without growing it, proto.FallocPunchHole|proto.FallocKeepSize
// frees; any other mode is EOPNOTSUPP. It returns the file's attributes.
func (c *Client) Fallocate(ctx context.Context, ino uint64, mode uint32, off, length uint64) (proto.Attr, error) {
	return c.doAttr(ctx, &proto.Fallocate{Ino: ino, Mode: mode, Off: off, Len: length})
}

// StatFS returns the store's space.
func (c *Client) StatFS(ctx context.Context) (proto.StatFSReply, error) {
	rep, buf, err := c.do(ctx, &proto.StatFS{})
	if err != nil {
		return proto.StatFSReply{}, err
	}
	r := *rep.(*proto.StatFSReply)
	proto.PutBuffer(buf)
	return r, nil
}

// Fsync makes file ino durable: with datasync its data and what reading it
// needs, otherwise all of it (and a new file's name).
func (c *Client) Fsync(ctx context.Context, ino uint64, datasync bool) error {
	return c.doEmpty(ctx, &proto.Fsync{Ino: ino, Datasync: datasync})
}

// Sync commits: everything answered before it is durable when it returns.
func (c *Client) Sync(ctx context.Context) error {
	return c.doEmpty(ctx, &proto.Sync{})
}

// Open takes a hold on file ino and returns its handle and attributes:
// until Release(handle), removing the file's last name keeps its inode and
// data, still readable and writable by number. The handle belongs to this
// client's connection: the server releases it when the connection ends
// (Close, or the client's process exiting), and never closes a connection
// that holds one as idle. A redial after a connection-level timeout (a
// frame or write deadline) loses the old connection's holds: the server
// numbers handles uniquely, so releasing an old one then is EBADF and
// drops nobody else's hold. EMFILE past the server's handles per
// connection, EISDIR for a directory, ELOOP for a symbolic link. A call whose
// context ends before its reply drops the handle with the reply: it stays
// held until the connection ends.
func (c *Client) Open(ctx context.Context, ino uint64) (handle uint64, a proto.Attr, err error) {
	rep, buf, err := c.do(ctx, &proto.Open{Ino: ino})
	if err != nil {
		return 0, proto.Attr{}, err
	}
	r := *rep.(*proto.OpenReply)
	proto.PutBuffer(buf)
	return r.Handle, r.Attr, nil
}

// Release drops a handle Open returned; the last hold of a file whose
// names are all gone frees it. EBADF for a handle this connection does not
// hold.
func (c *Client) Release(ctx context.Context, handle uint64) error {
	return c.doEmpty(ctx, &proto.Release{Handle: handle})
}

// Symlink makes a symbolic link name in dir pointing at target (at most
// proto.SymlinkTargetMax bytes, and what the store's node size allows:
// ENAMETOOLONG past it; ENOENT if empty). The target is not looked at: a
// link may dangle.
func (c *Client) Symlink(ctx context.Context, dir uint64, name, target string) (proto.Attr, error) {
	return c.doAttr(ctx, &proto.Symlink{Dir: dir, Name: name, Target: target})
}

// Readlink returns symbolic link ino's target; EINVAL if ino is not one.
func (c *Client) Readlink(ctx context.Context, ino uint64) (string, error) {
	rep, buf, err := c.do(ctx, &proto.Readlink{Ino: ino})
	if err != nil {
		return "", err
	}
	target := rep.(*proto.ReadlinkReply).Target // a string: a copy
	proto.PutBuffer(buf)
	return target, nil
}

// Resolve returns the attributes of the inode at path ('/'-separated,
// absolute within the store; a path through a symbolic link is ELOOP: the
// store never follows one).
func (c *Client) Resolve(ctx context.Context, path string) (proto.Attr, error) {
	return c.doAttr(ctx, &proto.Resolve{Path: path})
}
