package proto

import "syscall"

// The data requests: write and read by inode, fsync and sync, and the path
// conveniences put and get. Each carries at most IOSizeMax bytes of data;
// a larger file is streamed as pipelined writes or reads of chunks
// (doc.go, "Streaming").

// WriteFlags are a Write's flags, as pwritev2's RWF_DSYNC and RWF_SYNC.
type WriteFlags uint32

// The write flags.
const (
	// WriteDsync makes the write's data durable before the reply, as if
	// followed by fsync(datasync).
	WriteDsync WriteFlags = 1 << 0
	// WriteSync makes the write and the file's metadata durable before
	// the reply, as if followed by fsync.
	WriteSync WriteFlags = 1 << 1

	writeFlagsKnown = WriteDsync | WriteSync
)

// Write writes Data into file Ino at Off. Payload: ino u64, offset u64,
// flags u32, data (the rest of the payload, ≤ IOSizeMax bytes).
type Write struct {
	Ino   uint64
	Off   uint64
	Flags WriteFlags
	Data  []byte // aliases the frame when decoded
}

func (*Write) Op() Op { return OpWrite }
func (r *Write) Validate() error {
	if r.Flags&^writeFlagsKnown != 0 {
		return invalid(syscall.EINVAL, "write: unknown flags %#x", uint32(r.Flags&^writeFlagsKnown))
	}
	return checkData(OpWrite, len(r.Data))
}
func (r *Write) decode(d *decoder) {
	r.Ino, r.Off, r.Flags = d.u64("ino"), d.u64("offset"), WriteFlags(d.u32("flags"))
	r.Data = d.data()
}
func (r *Write) appendPayload(b []byte) []byte {
	return append(appendU32(appendU64(appendU64(b, r.Ino), r.Off), uint32(r.Flags)), r.Data...)
}

// Read reads up to Len bytes of file Ino from Off; a shorter reply means
// the end of the file. Payload: ino u64, offset u64, len u32
// (≤ IOSizeMax).
type Read struct {
	Ino uint64
	Off uint64
	Len uint32
}

func (*Read) Op() Op            { return OpRead }
func (r *Read) Validate() error { return checkData(OpRead, int(r.Len)) }
func (r *Read) decode(d *decoder) {
	r.Ino, r.Off, r.Len = d.u64("ino"), d.u64("offset"), d.u32("len")
}
func (r *Read) appendPayload(b []byte) []byte {
	return appendU32(appendU64(appendU64(b, r.Ino), r.Off), r.Len)
}

// Fallocate allocates or frees file Ino's blocks in [Off, Off+Len), as
// fallocate(2) with Mode's FALLOC_FL_* flags: 0, FallocKeepSize, or
// FallocPunchHole|FallocKeepSize; the server answers EOPNOTSUPP for any
// other mode, EINVAL for Len 0 or a range past 2^63. Payload: ino u64,
// mode u32, offset u64, len u64.
type Fallocate struct {
	Ino  uint64
	Mode uint32
	Off  uint64
	Len  uint64
}

// fallocate's modes, Linux's FALLOC_FL_* values.
const (
	FallocKeepSize  = 0x01
	FallocPunchHole = 0x02
)

func (*Fallocate) Op() Op          { return OpFallocate }
func (*Fallocate) Validate() error { return nil }
func (r *Fallocate) decode(d *decoder) {
	r.Ino, r.Mode, r.Off, r.Len = d.u64("ino"), d.u32("mode"), d.u64("offset"), d.u64("len")
}
func (r *Fallocate) appendPayload(b []byte) []byte {
	return appendU64(appendU64(appendU32(appendU64(b, r.Ino), r.Mode), r.Off), r.Len)
}

// Fsync makes inode Ino durable: its data and metadata, or with Datasync
// its data and what is needed to read it back. Payload: ino u64, datasync
// bool.
type Fsync struct {
	Ino      uint64
	Datasync bool
}

func (*Fsync) Op() Op              { return OpFsync }
func (*Fsync) Validate() error     { return nil }
func (r *Fsync) decode(d *decoder) { r.Ino, r.Datasync = d.u64("ino"), d.bool("datasync") }
func (r *Fsync) appendPayload(b []byte) []byte {
	return appendBool(appendU64(b, r.Ino), r.Datasync)
}

// Sync commits the running transaction: everything written before it is
// durable when it is answered. Empty payload.
type Sync struct{}

func (*Sync) Op() Op                        { return OpSync }
func (*Sync) Validate() error               { return nil }
func (*Sync) decode(*decoder)               {}
func (*Sync) appendPayload(b []byte) []byte { return b }

// Put creates or replaces the file at Path with Data — a new inode renamed
// over the old name, so readers see the old content or the new, never a
// mix — and with Fsync makes it durable before the reply. Payload: path,
// fsync bool, data (the rest, ≤ IOSizeMax bytes).
type Put struct {
	Path  string
	Fsync bool
	Data  []byte // aliases the frame when decoded
}

func (*Put) Op() Op { return OpPut }
func (r *Put) Validate() error {
	if err := checkPath(OpPut, r.Path); err != nil {
		return err
	}
	return checkData(OpPut, len(r.Data))
}
func (r *Put) decode(d *decoder) {
	r.Path, r.Fsync, r.Data = d.path("path"), d.bool("fsync"), d.data()
}
func (r *Put) appendPayload(b []byte) []byte {
	return append(appendBool(appendPath(b, r.Path), r.Fsync), r.Data...)
}

// Get returns the attributes and the first bytes (up to the negotiated
// Limits.IOSizeMax) of the file at Path. Payload: path.
type Get struct {
	Path string
}

func (*Get) Op() Op                          { return OpGet }
func (r *Get) Validate() error               { return checkPath(OpGet, r.Path) }
func (r *Get) decode(d *decoder)             { r.Path = d.path("path") }
func (r *Get) appendPayload(b []byte) []byte { return appendPath(b, r.Path) }
