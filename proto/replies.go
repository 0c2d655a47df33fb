package proto

import "syscall"

// The reply payloads other than Attr (attr.go).

// Empty is the reply of unlink, rmdir, rename, fsync and sync: status OK
// says it all. Empty payload.
type Empty struct{}

func (*Empty) Validate() error               { return nil }
func (*Empty) kind() replyKind               { return replyEmpty }
func (*Empty) decode(*decoder)               {}
func (*Empty) appendPayload(b []byte) []byte { return b }

// DirEntry is one entry of a listing. Cookie resumes the listing after it.
// On the wire: ino u64, cookie u64, type u8, name.
type DirEntry struct {
	Ino    uint64
	Cookie uint64
	Type   uint8 // d_type: 4 directory (DT_DIR), 8 file (DT_REG), 10 symbolic link (DT_LNK)
	Name   string
}

// ReadDirReply is readdir's reply: at most the request's Max entries
// (≤ ReadDirEntriesMax), fewer meaning the end of the directory. Payload:
// count u32, then count entries.
type ReadDirReply struct {
	Entries []DirEntry
}

func (r *ReadDirReply) Validate() error {
	if len(r.Entries) > ReadDirEntriesMax {
		return invalid(syscall.EMSGSIZE, "readdir reply of %d entries, more than %d", len(r.Entries), ReadDirEntriesMax)
	}
	for i := range r.Entries {
		if err := checkName(OpReadDir, "entry name", r.Entries[i].Name); err != nil {
			return err
		}
	}
	return nil
}

func (*ReadDirReply) kind() replyKind { return replyReadDir }

func (r *ReadDirReply) decode(d *decoder) {
	n := d.u32("entry count")
	// Both bounds before the slice is made: the count's limit, and the
	// bytes its smallest entries would take.
	if n > ReadDirEntriesMax {
		d.fail("readdir reply of %d entries, more than %d", n, ReadDirEntriesMax)
		return
	}
	if int(n)*dirEntryMin > len(d.b) {
		d.fail("%d entries overrun the payload (%d bytes left)", n, len(d.b))
		return
	}
	if n == 0 {
		return
	}
	r.Entries = make([]DirEntry, n)
	for i := range r.Entries {
		e := &r.Entries[i]
		e.Ino, e.Cookie, e.Type, e.Name = d.u64("entry ino"), d.u64("entry cookie"), d.u8("entry type"), d.name("entry name")
	}
}

func (r *ReadDirReply) appendPayload(b []byte) []byte {
	b = appendU32(b, uint32(len(r.Entries)))
	for i := range r.Entries {
		e := &r.Entries[i]
		b = appendName(appendU8(appendU64(appendU64(b, e.Ino), e.Cookie), e.Type), e.Name)
	}
	return b
}

// StatFSReply is statfs's reply: the store's space. Payload (40 bytes):
// block size u32, name max u32, blocks u64, blocks free u64, blocks
// available u64, dirty bytes i64.
type StatFSReply struct {
	BlockSize   uint32
	NameMax     uint32
	Blocks      uint64 // device size in blocks
	BlocksFree  uint64 // free blocks, the metadata reserve included
	BlocksAvail uint64 // blocks new data may take
	DirtyBytes  int64  // buffered data not yet written back
}

func (*StatFSReply) Validate() error { return nil }
func (*StatFSReply) kind() replyKind { return replyStatFS }

func (r *StatFSReply) decode(d *decoder) {
	r.BlockSize, r.NameMax = d.u32("block size"), d.u32("name max")
	r.Blocks, r.BlocksFree, r.BlocksAvail = d.u64("blocks"), d.u64("blocks free"), d.u64("blocks available")
	r.DirtyBytes = int64(d.u64("dirty bytes"))
}

func (r *StatFSReply) appendPayload(b []byte) []byte {
	b = appendU32(appendU32(b, r.BlockSize), r.NameMax)
	b = appendU64(appendU64(appendU64(b, r.Blocks), r.BlocksFree), r.BlocksAvail)
	return appendU64(b, uint64(r.DirtyBytes))
}

// WriteReply is write's reply: how many bytes were written. Fewer than
// sent means the rest failed; writing the rest again reports why (as
// write(2)). Payload: n u32.
type WriteReply struct {
	N uint32
}

func (r *WriteReply) Validate() error               { return checkData(OpWrite, int(r.N)) }
func (*WriteReply) kind() replyKind                 { return replyWrite }
func (r *WriteReply) decode(d *decoder)             { r.N = d.u32("n") }
func (r *WriteReply) appendPayload(b []byte) []byte { return appendU32(b, r.N) }

// ReadReply is read's reply: the bytes read, fewer than asked only at the
// end of the file. Payload: data (the whole payload).
type ReadReply struct {
	Data []byte // aliases the frame when decoded
}

func (r *ReadReply) Validate() error               { return checkData(OpRead, len(r.Data)) }
func (*ReadReply) kind() replyKind                 { return replyRead }
func (r *ReadReply) decode(d *decoder)             { r.Data = d.data() }
func (r *ReadReply) appendPayload(b []byte) []byte { return append(b, r.Data...) }

// GetReply is get's reply: the file's attributes and its first bytes. When
// Attr.Size is more than len(Data), the client reads the rest by inode
// (doc.go, "Streaming"). Payload: attr (96 bytes), data (the rest).
type GetReply struct {
	Attr Attr
	Data []byte // aliases the frame when decoded
}

func (r *GetReply) Validate() error {
	if err := r.Attr.Validate(); err != nil {
		return err
	}
	if uint64(len(r.Data)) > r.Attr.Size {
		return invalid(syscall.EINVAL, "get reply of %d bytes for a file of %d", len(r.Data), r.Attr.Size)
	}
	return checkData(OpGet, len(r.Data))
}
func (*GetReply) kind() replyKind                 { return replyGet }
func (r *GetReply) decode(d *decoder)             { r.Attr.decode(d); r.Data = d.data() }
func (r *GetReply) appendPayload(b []byte) []byte { return append(r.Attr.appendPayload(b), r.Data...) }
