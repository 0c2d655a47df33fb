package proto

import "strconv"

// Op is a request's operation code. Each op has one request payload type
// and one reply payload type (the table below); a response echoes its
// request's op, so either side can decode a payload knowing only its frame.
type Op uint8

// The ops of version 1. Never renumber one: the values are the wire. 0 is
// no op: a request with op 0 is an unknown op, and a response with op 0 is
// a connection-level error (request id 0).
const (
	OpLookup  Op = 1  // Lookup → Attr
	OpCreate  Op = 2  // Create → Attr
	OpMkdir   Op = 3  // Mkdir → Attr
	OpLink    Op = 4  // Link → Attr
	OpUnlink  Op = 5  // Unlink → Empty
	OpRmdir   Op = 6  // Rmdir → Empty
	OpRename  Op = 7  // Rename → Empty
	OpReadDir Op = 8  // ReadDir → ReadDirReply
	OpStat    Op = 9  // Stat → Attr
	OpSetAttr Op = 10 // SetAttr → Attr (truncate is a setattr of the size)
	OpStatFS  Op = 11 // StatFS → StatFSReply
	OpWrite   Op = 12 // Write → WriteReply
	OpRead    Op = 13 // Read → ReadReply
	OpFsync   Op = 14 // Fsync → Empty
	OpSync    Op = 15 // Sync → Empty
	OpResolve Op = 16 // Resolve → Attr
	OpPut     Op = 17 // Put → Attr
	OpGet     Op = 18 // Get → GetReply

	// The POSIX ops the FUSE mount needs, added to version 1: a server
	// without one answers ENOSYS and the connection goes on, so they need
	// no protocol version.
	OpSymlink     Op = 19 // Symlink → Attr
	OpReadlink    Op = 20 // Readlink → ReadlinkReply
	OpGetXattr    Op = 21 // GetXattr → XattrReply
	OpSetXattr    Op = 22 // SetXattr → Empty
	OpListXattr   Op = 23 // ListXattr → XattrReply
	OpRemoveXattr Op = 24 // RemoveXattr → Empty
	OpOpen        Op = 25 // Open → OpenReply (a handle of the connection)
	OpRelease     Op = 26 // Release → Empty
	OpFallocate   Op = 27 // Fallocate → Attr
	OpRename2     Op = 28 // Rename2 → Empty

	opCount = 29
)

// replyKind names a reply payload type; several ops share one.
type replyKind uint8

const (
	replyNone replyKind = iota
	replyEmpty
	replyAttr
	replyReadDir
	replyStatFS
	replyWrite
	replyRead
	replyGet
	replyReadlink
	replyOpen
	replyXattr
)

// ops is the op table: name (as in spans, "ustore.<name>") and reply kind.
var ops = [opCount]struct {
	name  string
	reply replyKind
}{
	OpLookup:  {"lookup", replyAttr},
	OpCreate:  {"create", replyAttr},
	OpMkdir:   {"mkdir", replyAttr},
	OpLink:    {"link", replyAttr},
	OpUnlink:  {"unlink", replyEmpty},
	OpRmdir:   {"rmdir", replyEmpty},
	OpRename:  {"rename", replyEmpty},
	OpReadDir: {"readdir", replyReadDir},
	OpStat:    {"stat", replyAttr},
	OpSetAttr: {"setattr", replyAttr},
	OpStatFS:  {"statfs", replyStatFS},
	OpWrite:   {"write", replyWrite},
	OpRead:    {"read", replyRead},
	OpFsync:   {"fsync", replyEmpty},
	OpSync:    {"sync", replyEmpty},
	OpResolve: {"resolve", replyAttr},
	OpPut:     {"put", replyAttr},
	OpGet:     {"get", replyGet},

	OpSymlink:     {"symlink", replyAttr},
	OpReadlink:    {"readlink", replyReadlink},
	OpGetXattr:    {"getxattr", replyXattr},
	OpSetXattr:    {"setxattr", replyEmpty},
	OpListXattr:   {"listxattr", replyXattr},
	OpRemoveXattr: {"removexattr", replyEmpty},
	OpOpen:        {"open", replyOpen},
	OpRelease:     {"release", replyEmpty},
	OpFallocate:   {"fallocate", replyAttr},
	OpRename2:     {"rename2", replyEmpty},
}

// Known reports whether op is an op of this protocol version: one with a
// row in the op table.
func (op Op) Known() bool { return op > 0 && op < opCount && ops[op].name != "" }

// String is the op's name ("lookup"), or "op(N)" for an unknown one.
func (op Op) String() string {
	if op.Known() {
		return ops[op].name
	}
	return "op(" + strconv.Itoa(int(op)) + ")"
}

// newRequest returns an empty request of op, nil for an unknown op.
func newRequest(op Op) Request {
	switch op {
	case OpLookup:
		return new(Lookup)
	case OpCreate:
		return new(Create)
	case OpMkdir:
		return new(Mkdir)
	case OpLink:
		return new(Link)
	case OpUnlink:
		return new(Unlink)
	case OpRmdir:
		return new(Rmdir)
	case OpRename:
		return new(Rename)
	case OpReadDir:
		return new(ReadDir)
	case OpStat:
		return new(Stat)
	case OpSetAttr:
		return new(SetAttr)
	case OpStatFS:
		return new(StatFS)
	case OpWrite:
		return new(Write)
	case OpRead:
		return new(Read)
	case OpFsync:
		return new(Fsync)
	case OpSync:
		return new(Sync)
	case OpResolve:
		return new(Resolve)
	case OpPut:
		return new(Put)
	case OpGet:
		return new(Get)
	case OpSymlink:
		return new(Symlink)
	case OpReadlink:
		return new(Readlink)
	case OpOpen:
		return new(Open)
	case OpRelease:
		return new(Release)
	case OpFallocate:
		return new(Fallocate)
	case OpRename2:
		return new(Rename2)
	case OpGetXattr:
		return new(GetXattr)
	case OpSetXattr:
		return new(SetXattr)
	case OpListXattr:
		return new(ListXattr)
	case OpRemoveXattr:
		return new(RemoveXattr)
	}
	return nil
}

// newReply returns an empty reply of op, nil for an unknown op.
func newReply(op Op) Reply {
	if !op.Known() {
		return nil
	}
	switch ops[op].reply {
	case replyEmpty:
		return new(Empty)
	case replyAttr:
		return new(Attr)
	case replyReadDir:
		return new(ReadDirReply)
	case replyStatFS:
		return new(StatFSReply)
	case replyWrite:
		return new(WriteReply)
	case replyRead:
		return new(ReadReply)
	case replyGet:
		return new(GetReply)
	case replyReadlink:
		return new(ReadlinkReply)
	case replyOpen:
		return new(OpenReply)
	case replyXattr:
		return new(XattrReply)
	}
	return nil
}
