package proto

import "syscall"

// The namespace requests: names in directories, by inode number. A name is
// 0–255 bytes on the wire; what makes a name valid beyond its length (not
// empty, no '/', no NUL, not "." or "..") is the store's rule, answered
// with EINVAL.

// Lookup finds Name in directory Dir. Payload: dir u64, name.
type Lookup struct {
	Dir  uint64
	Name string
}

func (*Lookup) Op() Op              { return OpLookup }
func (r *Lookup) Validate() error   { return checkName(OpLookup, "name", r.Name) }
func (r *Lookup) decode(d *decoder) { r.Dir, r.Name = d.u64("dir"), d.name("name") }
func (r *Lookup) appendPayload(b []byte) []byte {
	return appendName(appendU64(b, r.Dir), r.Name)
}

// Create makes a file Name in directory Dir with permissions Perm.
// Payload: dir u64, perm u32, name.
type Create struct {
	Dir  uint64
	Perm uint32 // permission bits (07777) only
	Name string
}

func (*Create) Op() Op { return OpCreate }
func (r *Create) Validate() error {
	if err := checkPerm(OpCreate, r.Perm); err != nil {
		return err
	}
	return checkName(OpCreate, "name", r.Name)
}
func (r *Create) decode(d *decoder) {
	r.Dir, r.Perm, r.Name = d.u64("dir"), d.u32("perm"), d.name("name")
}
func (r *Create) appendPayload(b []byte) []byte {
	return appendName(appendU32(appendU64(b, r.Dir), r.Perm), r.Name)
}

// Mkdir makes a directory Name in directory Dir with permissions Perm.
// Payload: dir u64, perm u32, name.
type Mkdir struct {
	Dir  uint64
	Perm uint32 // permission bits (07777) only
	Name string
}

func (*Mkdir) Op() Op { return OpMkdir }
func (r *Mkdir) Validate() error {
	if err := checkPerm(OpMkdir, r.Perm); err != nil {
		return err
	}
	return checkName(OpMkdir, "name", r.Name)
}
func (r *Mkdir) decode(d *decoder) {
	r.Dir, r.Perm, r.Name = d.u64("dir"), d.u32("perm"), d.name("name")
}
func (r *Mkdir) appendPayload(b []byte) []byte {
	return appendName(appendU32(appendU64(b, r.Dir), r.Perm), r.Name)
}

// Link gives inode Ino the name Name in directory Dir. Payload: ino u64,
// dir u64, name.
type Link struct {
	Ino  uint64
	Dir  uint64
	Name string
}

func (*Link) Op() Op            { return OpLink }
func (r *Link) Validate() error { return checkName(OpLink, "name", r.Name) }
func (r *Link) decode(d *decoder) {
	r.Ino, r.Dir, r.Name = d.u64("ino"), d.u64("dir"), d.name("name")
}
func (r *Link) appendPayload(b []byte) []byte {
	return appendName(appendU64(appendU64(b, r.Ino), r.Dir), r.Name)
}

// Unlink removes the file name Name from directory Dir. Payload: dir u64,
// name.
type Unlink struct {
	Dir  uint64
	Name string
}

func (*Unlink) Op() Op              { return OpUnlink }
func (r *Unlink) Validate() error   { return checkName(OpUnlink, "name", r.Name) }
func (r *Unlink) decode(d *decoder) { r.Dir, r.Name = d.u64("dir"), d.name("name") }
func (r *Unlink) appendPayload(b []byte) []byte {
	return appendName(appendU64(b, r.Dir), r.Name)
}

// Rmdir removes the empty directory Name from directory Dir. Payload: dir
// u64, name.
type Rmdir struct {
	Dir  uint64
	Name string
}

func (*Rmdir) Op() Op              { return OpRmdir }
func (r *Rmdir) Validate() error   { return checkName(OpRmdir, "name", r.Name) }
func (r *Rmdir) decode(d *decoder) { r.Dir, r.Name = d.u64("dir"), d.name("name") }
func (r *Rmdir) appendPayload(b []byte) []byte {
	return appendName(appendU64(b, r.Dir), r.Name)
}

// Rename moves SrcName in SrcDir to DstName in DstDir, replacing what
// DstName named (as rename(2)). Payload: src dir u64, dst dir u64, src
// name, dst name.
type Rename struct {
	SrcDir  uint64
	SrcName string
	DstDir  uint64
	DstName string
}

func (*Rename) Op() Op { return OpRename }
func (r *Rename) Validate() error {
	if err := checkName(OpRename, "source name", r.SrcName); err != nil {
		return err
	}
	return checkName(OpRename, "destination name", r.DstName)
}
func (r *Rename) decode(d *decoder) {
	r.SrcDir, r.DstDir = d.u64("source dir"), d.u64("destination dir")
	r.SrcName, r.DstName = d.name("source name"), d.name("destination name")
}
func (r *Rename) appendPayload(b []byte) []byte {
	b = appendU64(appendU64(b, r.SrcDir), r.DstDir)
	return appendName(appendName(b, r.SrcName), r.DstName)
}

// Rename2 is Rename with renameat2's flags: RenameNoReplace (EEXIST if
// DstName exists) or RenameExchange (the two existing names swap their
// inodes); the server answers EINVAL for both or any other. Payload: as
// Rename's, then flags u32.
type Rename2 struct {
	Rename
	Flags uint32
}

// renameat2's flags, Linux's RENAME_* values.
const (
	RenameNoReplace = 1 << 0
	RenameExchange  = 1 << 1
)

func (*Rename2) Op() Op { return OpRename2 }
func (r *Rename2) Validate() error {
	if err := checkName(OpRename2, "source name", r.SrcName); err != nil {
		return err
	}
	return checkName(OpRename2, "destination name", r.DstName)
}
func (r *Rename2) decode(d *decoder) {
	r.Rename.decode(d)
	r.Flags = d.u32("flags")
}
func (r *Rename2) appendPayload(b []byte) []byte {
	return appendU32(r.Rename.appendPayload(b), r.Flags)
}

// ReadDir lists up to Max entries of directory Dir after Cookie (0: from
// the start). Fewer than Max entries in the reply means the end. Payload:
// dir u64, cookie u64, max u32 (1–ReadDirEntriesMax).
type ReadDir struct {
	Dir    uint64
	Cookie uint64
	Max    uint32
}

func (*ReadDir) Op() Op { return OpReadDir }
func (r *ReadDir) Validate() error {
	if r.Max < 1 || r.Max > ReadDirEntriesMax {
		return invalid(syscall.EINVAL, "readdir: max %d outside [1, %d]", r.Max, ReadDirEntriesMax)
	}
	return nil
}
func (r *ReadDir) decode(d *decoder) {
	r.Dir, r.Cookie, r.Max = d.u64("dir"), d.u64("cookie"), d.u32("max")
}
func (r *ReadDir) appendPayload(b []byte) []byte {
	return appendU32(appendU64(appendU64(b, r.Dir), r.Cookie), r.Max)
}
