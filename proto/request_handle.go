package proto

// The handle requests: open and release. A handle is a hold on a file
// that keeps its inode and data while the file's last name is removed (an
// unlinked open file, as POSIX's). It belongs to the connection that
// opened it: the server releases every handle a connection holds when the
// connection ends, however it ends, and a handle of another connection is
// unknown here (EBADF). A connection holds at most the server's
// per-connection cap (EMFILE past it).

// Open takes a hold on file Ino and returns a handle. Payload: ino u64.
type Open struct {
	Ino uint64
}

func (*Open) Op() Op                          { return OpOpen }
func (*Open) Validate() error                 { return nil }
func (r *Open) decode(d *decoder)             { r.Ino = d.u64("ino") }
func (r *Open) appendPayload(b []byte) []byte { return appendU64(b, r.Ino) }

// Release drops handle Handle of this connection: the last hold of a file
// whose names are all gone frees it. EBADF for a handle the connection
// does not hold. Payload: handle u64.
type Release struct {
	Handle uint64
}

func (*Release) Op() Op                          { return OpRelease }
func (*Release) Validate() error                 { return nil }
func (r *Release) decode(d *decoder)             { r.Handle = d.u64("handle") }
func (r *Release) appendPayload(b []byte) []byte { return appendU64(b, r.Handle) }

// OpenReply is open's reply: the handle (the server never gives 0) and the file's
// attributes. Payload (104 bytes): handle u64, attr (96 bytes).
type OpenReply struct {
	Handle uint64
	Attr   Attr
}

func (r *OpenReply) Validate() error { return r.Attr.Validate() }
func (*OpenReply) kind() replyKind   { return replyOpen }
func (r *OpenReply) decode(d *decoder) {
	r.Handle = d.u64("handle")
	r.Attr.decode(d)
}
func (r *OpenReply) appendPayload(b []byte) []byte {
	return r.Attr.appendPayload(appendU64(b, r.Handle))
}
