package proto

import "syscall"

// The extended attribute requests (xattr(7)), by inode, as getxattr(2),
// setxattr(2), listxattr(2) and removexattr(2). A name is its whole name,
// namespace included ("user.mime_type"), 0–255 bytes on the wire (ERANGE
// past it, as the VFS); a value and a list are at most XattrSizeMax bytes.
// What is valid beyond those lengths (the namespace, an empty name) is the
// store's rule.

// XattrSizeMax bounds a value, a name list and a request's Size: Linux's
// XATTR_SIZE_MAX and XATTR_LIST_MAX, 64 KiB. A store may hold less
// (docs/PROTOCOL.md).
const XattrSizeMax = 64 << 10

// The SetXattr flags, as setxattr(2)'s.
const (
	XattrCreate  = 1 // EEXIST if the attribute exists
	XattrReplace = 2 // ENODATA if it does not
)

func checkXattrName(op Op, name string) error {
	if len(name) > NameLenMax {
		return invalid(syscall.ERANGE, "%v: attribute name is %d bytes, more than %d", op, len(name), NameLenMax)
	}
	return nil
}

func checkXattrSize(op Op, what string, n int) error {
	if n > XattrSizeMax {
		return invalid(syscall.E2BIG, "%v: %s of %d bytes, more than %d", op, what, n, XattrSizeMax)
	}
	return nil
}

// GetXattr reads attribute Name of inode Ino into a buffer of Size bytes:
// Size 0 asks only for the value's size; a value longer than a nonzero
// Size is ERANGE. Payload: ino u64, size u32, name. Reply: XattrReply.
type GetXattr struct {
	Ino  uint64
	Size uint32 // ≤ XattrSizeMax
	Name string
}

func (*GetXattr) Op() Op { return OpGetXattr }
func (r *GetXattr) Validate() error {
	if err := checkXattrSize(OpGetXattr, "buffer", int(r.Size)); err != nil {
		return err
	}
	return checkXattrName(OpGetXattr, r.Name)
}
func (r *GetXattr) decode(d *decoder) {
	r.Ino, r.Size, r.Name = d.u64("ino"), d.u32("size"), d.name("name")
}
func (r *GetXattr) appendPayload(b []byte) []byte {
	return appendName(appendU32(appendU64(b, r.Ino), r.Size), r.Name)
}

// SetXattr sets attribute Name of inode Ino to Value. Flags: XattrCreate,
// XattrReplace, or 0. Payload: ino u64, flags u32, name, value (the rest of
// the payload, ≤ XattrSizeMax bytes). Reply: Empty.
type SetXattr struct {
	Ino   uint64
	Flags uint32
	Name  string
	Value []byte // aliases the frame when decoded
}

func (*SetXattr) Op() Op { return OpSetXattr }
func (r *SetXattr) Validate() error {
	if r.Flags&^(XattrCreate|XattrReplace) != 0 {
		return invalid(syscall.EINVAL, "setxattr: unknown flags %#x", r.Flags&^(XattrCreate|XattrReplace))
	}
	if err := checkXattrSize(OpSetXattr, "value", len(r.Value)); err != nil {
		return err
	}
	return checkXattrName(OpSetXattr, r.Name)
}
func (r *SetXattr) decode(d *decoder) {
	r.Ino, r.Flags, r.Name = d.u64("ino"), d.u32("flags"), d.name("name")
	r.Value = d.data()
}
func (r *SetXattr) appendPayload(b []byte) []byte {
	return append(appendName(appendU32(appendU64(b, r.Ino), r.Flags), r.Name), r.Value...)
}

// ListXattr lists the attribute names of inode Ino into a buffer of Size
// bytes, each followed by a NUL (as listxattr(2)): Size 0 asks only for the
// list's size; a longer list than a nonzero Size is ERANGE. Payload: ino
// u64, size u32. Reply: XattrReply.
type ListXattr struct {
	Ino  uint64
	Size uint32 // ≤ XattrSizeMax
}

func (*ListXattr) Op() Op                          { return OpListXattr }
func (r *ListXattr) Validate() error               { return checkXattrSize(OpListXattr, "buffer", int(r.Size)) }
func (r *ListXattr) decode(d *decoder)             { r.Ino, r.Size = d.u64("ino"), d.u32("size") }
func (r *ListXattr) appendPayload(b []byte) []byte { return appendU32(appendU64(b, r.Ino), r.Size) }

// RemoveXattr removes attribute Name of inode Ino. Payload: ino u64, name.
// Reply: Empty.
type RemoveXattr struct {
	Ino  uint64
	Name string
}

func (*RemoveXattr) Op() Op              { return OpRemoveXattr }
func (r *RemoveXattr) Validate() error   { return checkXattrName(OpRemoveXattr, r.Name) }
func (r *RemoveXattr) decode(d *decoder) { r.Ino, r.Name = d.u64("ino"), d.name("name") }
func (r *RemoveXattr) appendPayload(b []byte) []byte {
	return appendName(appendU64(b, r.Ino), r.Name)
}

// XattrReply is the reply of getxattr and listxattr: Size is the value's
// (the list's) size in bytes, and Data the value (the list) itself, empty
// when the request's Size was 0. Payload: size u32, data (the rest).
type XattrReply struct {
	Size uint32
	Data []byte // aliases the frame when decoded
}

func (r *XattrReply) Validate() error {
	if err := checkXattrSize(OpGetXattr, "reply", int(r.Size)); err != nil {
		return err
	}
	if len(r.Data) != 0 && len(r.Data) != int(r.Size) {
		return invalid(syscall.EINVAL, "xattr reply of %d bytes says its size is %d", len(r.Data), r.Size)
	}
	return nil
}
func (*XattrReply) kind() replyKind                 { return replyXattr }
func (r *XattrReply) decode(d *decoder)             { r.Size = d.u32("size"); r.Data = d.data() }
func (r *XattrReply) appendPayload(b []byte) []byte { return append(appendU32(b, r.Size), r.Data...) }
