package client

import (
	"context"
	"slices"

	"ustore/proto"
)

// The extended attribute ops (xattr(7)). GetXattr and ListXattr take the
// size of the caller's buffer, as their syscalls: 0 asks for the size
// alone (the reply's Size, no Data); a value or list longer than a nonzero
// size fails with ERANGE. Names carry their namespace ("user.a"); the
// store keeps the user namespace only (EOPNOTSUPP for a set of another).

// XattrCreate and XattrReplace are SetXattr's flags, as setxattr(2)'s.
const (
	XattrCreate  = proto.XattrCreate
	XattrReplace = proto.XattrReplace
)

// GetXattr returns attribute name of inode ino, for a buffer of size bytes
// (more than proto.XattrSizeMax is cut to it, as getxattr(2) does):
// ENODATA if there is none.
func (c *Client) GetXattr(ctx context.Context, ino uint64, name string, size uint32) (proto.XattrReply, error) {
	return c.doXattr(ctx, &proto.GetXattr{Ino: ino, Name: name, Size: min(size, proto.XattrSizeMax)})
}

// SetXattr sets attribute name of inode ino to value; flags: XattrCreate,
// XattrReplace, or 0.
func (c *Client) SetXattr(ctx context.Context, ino uint64, name string, value []byte, flags uint32) error {
	return c.doEmpty(ctx, &proto.SetXattr{Ino: ino, Name: name, Value: value, Flags: flags})
}

// ListXattr returns the attribute names of inode ino, each followed by a
// NUL, for a buffer of size bytes (more than proto.XattrSizeMax is cut to
// it, as listxattr(2) does).
func (c *Client) ListXattr(ctx context.Context, ino uint64, size uint32) (proto.XattrReply, error) {
	return c.doXattr(ctx, &proto.ListXattr{Ino: ino, Size: min(size, proto.XattrSizeMax)})
}

// RemoveXattr removes attribute name of inode ino: ENODATA if there is
// none.
func (c *Client) RemoveXattr(ctx context.Context, ino uint64, name string) error {
	return c.doEmpty(ctx, &proto.RemoveXattr{Ino: ino, Name: name})
}

// doXattr is do for getxattr and listxattr: the reply's data copied out of
// the frame.
func (c *Client) doXattr(ctx context.Context, req proto.Request) (proto.XattrReply, error) {
	rep, buf, err := c.do(ctx, req)
	if err != nil {
		return proto.XattrReply{}, err
	}
	r := *rep.(*proto.XattrReply)
	r.Data = slices.Clone(r.Data)
	proto.PutBuffer(buf)
	return r, nil
}
