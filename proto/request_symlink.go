package proto

import "syscall"

// The symbolic link requests. A target is a path-like string of up to
// SymlinkTargetMax bytes on the wire (PATH_MAX − 1, as symlink(2) takes
// it); the store may hold less at small node sizes and answers
// ENAMETOOLONG past its own limit, and ENOENT for an empty target (as
// Linux's symlink("")). The store never follows a link.

// Symlink makes a symbolic link Name in directory Dir pointing at Target.
// Payload: dir u64, name, target (a path: u16 length, ≤ SymlinkTargetMax).
type Symlink struct {
	Dir    uint64
	Name   string
	Target string
}

func (*Symlink) Op() Op { return OpSymlink }
func (r *Symlink) Validate() error {
	if err := checkName(OpSymlink, "name", r.Name); err != nil {
		return err
	}
	return checkTarget(OpSymlink, r.Target)
}
func (r *Symlink) decode(d *decoder) {
	r.Dir, r.Name, r.Target = d.u64("dir"), d.name("name"), d.path("target")
}
func (r *Symlink) appendPayload(b []byte) []byte {
	return appendPath(appendName(appendU64(b, r.Dir), r.Name), r.Target)
}

// Readlink reads symbolic link Ino's target (EINVAL for any other inode,
// as readlink(2)). Payload: ino u64.
type Readlink struct {
	Ino uint64
}

func (*Readlink) Op() Op                          { return OpReadlink }
func (*Readlink) Validate() error                 { return nil }
func (r *Readlink) decode(d *decoder)             { r.Ino = d.u64("ino") }
func (r *Readlink) appendPayload(b []byte) []byte { return appendU64(b, r.Ino) }

// ReadlinkReply is readlink's reply: the target. Payload: target (a path:
// u16 length, 1–SymlinkTargetMax bytes).
type ReadlinkReply struct {
	Target string
}

func (r *ReadlinkReply) Validate() error {
	if r.Target == "" {
		return invalid(syscall.EINVAL, "readlink reply with an empty target")
	}
	return checkTarget(OpReadlink, r.Target)
}
func (*ReadlinkReply) kind() replyKind                 { return replyReadlink }
func (r *ReadlinkReply) decode(d *decoder)             { r.Target = d.path("target") }
func (r *ReadlinkReply) appendPayload(b []byte) []byte { return appendPath(b, r.Target) }

// checkTarget is Validate's check of a symbolic link target.
func checkTarget(op Op, target string) error {
	if len(target) > SymlinkTargetMax {
		return invalid(syscall.ENAMETOOLONG, "%v: target is %d bytes, more than %d", op, len(target), SymlinkTargetMax)
	}
	return nil
}
