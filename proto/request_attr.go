package proto

import "syscall"

// The attribute requests: stat, setattr (truncate included), statfs, and
// resolve (a path to its attributes).

// Stat returns inode Ino's attributes. Payload: ino u64.
type Stat struct {
	Ino uint64
}

func (*Stat) Op() Op                          { return OpStat }
func (*Stat) Validate() error                 { return nil }
func (r *Stat) decode(d *decoder)             { r.Ino = d.u64("ino") }
func (r *Stat) appendPayload(b []byte) []byte { return appendU64(b, r.Ino) }

// SetAttrMask says which of SetAttr's fields to set.
type SetAttrMask uint32

// The SetAttr fields.
const (
	SetMode  SetAttrMask = 1 << 0
	SetUID   SetAttrMask = 1 << 1
	SetGID   SetAttrMask = 1 << 2
	SetSize  SetAttrMask = 1 << 3 // truncate or extend a file (EISDIR for a directory)
	SetAtime SetAttrMask = 1 << 4
	SetMtime SetAttrMask = 1 << 5

	setAttrKnown = SetMode | SetUID | SetGID | SetSize | SetAtime | SetMtime
)

// SetAttr changes the attributes of inode Ino named in Mask; the others
// stay. Truncate is a SetAttr of the size alone. Every field is on the
// wire; one not in Mask must be zero, so that a request has one encoding.
// Payload (56 bytes): ino u64, mask u32, mode u32, uid u32, gid u32,
// size u64, atime timespec, mtime timespec.
type SetAttr struct {
	Ino          uint64
	Mask         SetAttrMask
	Mode         uint32 // permission bits (07777) only
	UID, GID     uint32
	Size         uint64
	Atime, Mtime Timespec
}

func (*SetAttr) Op() Op { return OpSetAttr }
func (r *SetAttr) Validate() error {
	if r.Mask&^setAttrKnown != 0 {
		return invalid(syscall.EINVAL, "setattr: unknown mask bits %#x", uint32(r.Mask&^setAttrKnown))
	}
	if err := checkPerm(OpSetAttr, r.Mode); err != nil {
		return err
	}
	for _, f := range [...]struct {
		bit  SetAttrMask
		zero bool
	}{
		{SetMode, r.Mode == 0}, {SetUID, r.UID == 0}, {SetGID, r.GID == 0},
		{SetSize, r.Size == 0}, {SetAtime, r.Atime == Timespec{}}, {SetMtime, r.Mtime == Timespec{}},
	} {
		if r.Mask&f.bit == 0 && !f.zero {
			return invalid(syscall.EINVAL, "setattr: a field not in the mask (%#x) is not zero", uint32(f.bit))
		}
	}
	if !r.Atime.valid() || !r.Mtime.valid() {
		return invalid(syscall.EINVAL, "setattr: nanoseconds not below 1e9")
	}
	return nil
}
func (r *SetAttr) decode(d *decoder) {
	r.Ino, r.Mask = d.u64("ino"), SetAttrMask(d.u32("mask"))
	r.Mode, r.UID, r.GID = d.u32("mode"), d.u32("uid"), d.u32("gid")
	r.Size, r.Atime, r.Mtime = d.u64("size"), d.timespec("atime", "atime nanoseconds"), d.timespec("mtime", "mtime nanoseconds")
}
func (r *SetAttr) appendPayload(b []byte) []byte {
	b = appendU32(appendU64(b, r.Ino), uint32(r.Mask))
	b = appendU32(appendU32(appendU32(b, r.Mode), r.UID), r.GID)
	return appendTimespec(appendTimespec(appendU64(b, r.Size), r.Atime), r.Mtime)
}

// StatFS returns the store's space accounting. Empty payload.
type StatFS struct{}

func (*StatFS) Op() Op                        { return OpStatFS }
func (*StatFS) Validate() error               { return nil }
func (*StatFS) decode(*decoder)               {}
func (*StatFS) appendPayload(b []byte) []byte { return b }

// Resolve returns the attributes of the inode at Path ('/'-separated,
// absolute within the store). Payload: path.
type Resolve struct {
	Path string
}

func (*Resolve) Op() Op                          { return OpResolve }
func (r *Resolve) Validate() error               { return checkPath(OpResolve, r.Path) }
func (r *Resolve) decode(d *decoder)             { r.Path = d.path("path") }
func (r *Resolve) appendPayload(b []byte) []byte { return appendPath(b, r.Path) }
