package proto_test

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"

	"ustore/proto"
)

// sampleTrace is a valid traceparent: W3C's own example.
var sampleTrace = mustTrace("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")

func mustTrace(s string) proto.Traceparent {
	t, err := proto.ParseTraceparent(s)
	if err != nil {
		panic(err)
	}
	return t
}

var sampleAttr = proto.Attr{
	Ino: 257, Mode: 0o100644, Nlink: 1, UID: 1000, GID: 100, Size: 5000, Blocks: 8192, Generation: 7,
	Atime: proto.Timespec{Sec: 1_700_000_000, Nsec: 1}, Mtime: proto.Timespec{Sec: -1, Nsec: 999_999_999},
	Ctime: proto.Timespec{Sec: 1 << 40}, Btime: proto.Timespec{Sec: 3, Nsec: 4},
}

// requests has one request or more of every op, with non-trivial values.
func requests() []proto.Request {
	long := strings.Repeat("n", proto.NameLenMax)
	return []proto.Request{
		&proto.Lookup{Dir: 256, Name: "a"},
		&proto.Lookup{Dir: 1<<64 - 1, Name: long},
		&proto.Lookup{Dir: 256, Name: ""},
		&proto.Create{Dir: 256, Perm: 0o644, Name: "file"},
		&proto.Mkdir{Dir: 300, Perm: 0o7777, Name: "dir"},
		&proto.Link{Ino: 301, Dir: 256, Name: "hard"},
		&proto.Unlink{Dir: 256, Name: "gone"},
		&proto.Rmdir{Dir: 256, Name: "dir"},
		&proto.Rename{SrcDir: 256, SrcName: "a", DstDir: 300, DstName: long},
		&proto.ReadDir{Dir: 256, Cookie: 0, Max: 1},
		&proto.ReadDir{Dir: 256, Cookie: 1 << 50, Max: proto.ReadDirEntriesMax},
		&proto.Stat{Ino: 256},
		&proto.SetAttr{Ino: 257},
		&proto.SetAttr{Ino: 257, Mask: proto.SetSize, Size: 1 << 44},
		&proto.SetAttr{
			Ino: 257, Mask: proto.SetMode | proto.SetUID | proto.SetGID | proto.SetSize | proto.SetAtime | proto.SetMtime,
			Mode: 0o600, UID: 1, GID: 2, Size: 3, Atime: proto.Timespec{Sec: 4, Nsec: 5}, Mtime: proto.Timespec{Sec: -6, Nsec: 999_999_999},
		},
		&proto.StatFS{},
		&proto.Write{Ino: 257, Off: 4096, Data: []byte("hello")},
		&proto.Write{Ino: 257, Off: 0, Flags: proto.WriteDsync | proto.WriteSync, Data: nil},
		&proto.Write{Ino: 257, Off: 1 << 40, Flags: proto.WriteSync, Data: bytes.Repeat([]byte{0xab}, proto.IOSizeMax)},
		&proto.Read{Ino: 257, Off: 8192, Len: proto.IOSizeMax},
		&proto.Read{Ino: 257, Off: 0, Len: 0},
		&proto.Fsync{Ino: 257},
		&proto.Fsync{Ino: 257, Datasync: true},
		&proto.Sync{},
		&proto.Resolve{Path: "/a/b/c"},
		&proto.Resolve{Path: strings.Repeat("/", proto.PathLenMax)},
		&proto.Put{Path: "/a/b", Data: []byte("content")},
		&proto.Put{Path: "/" + strings.Repeat("p", proto.PathLenMax-1), Fsync: true, Data: bytes.Repeat([]byte{1}, proto.IOSizeMax)},
		&proto.Get{Path: "/a/b"},
		&proto.Symlink{Dir: 256, Name: "l", Target: "../a/b"},
		&proto.Symlink{Dir: 1<<64 - 1, Name: long, Target: strings.Repeat("t", proto.SymlinkTargetMax)},
		&proto.Symlink{Dir: 256, Name: "empty", Target: ""},
		&proto.Readlink{Ino: 258},
		&proto.Open{Ino: 257},
		&proto.Open{Ino: 1<<64 - 1},
		&proto.Release{Handle: 1},
		&proto.Release{Handle: 1<<64 - 1},
		&proto.Fallocate{Ino: 257, Mode: 0, Off: 4096, Len: 1 << 20},
		&proto.Fallocate{Ino: 257, Mode: proto.FallocPunchHole | proto.FallocKeepSize, Off: 1<<64 - 1, Len: 1<<63 + 5},
		&proto.Rename2{Rename: proto.Rename{SrcDir: 256, SrcName: "a", DstDir: 300, DstName: long}, Flags: proto.RenameExchange},
		&proto.Rename2{Rename: proto.Rename{SrcDir: 256, SrcName: long, DstDir: 256, DstName: "b"}, Flags: 1<<32 - 1},
		&proto.GetXattr{Ino: 257, Size: 0, Name: "user.a"},
		&proto.GetXattr{Ino: 257, Size: proto.XattrSizeMax, Name: strings.Repeat("n", proto.NameLenMax)},
		&proto.GetXattr{Ino: 257, Size: 10, Name: ""},
		&proto.SetXattr{Ino: 257, Flags: proto.XattrCreate, Name: "user.a", Value: []byte("v")},
		&proto.SetXattr{Ino: 257, Flags: proto.XattrReplace, Name: "user.b", Value: bytes.Repeat([]byte{1}, proto.XattrSizeMax)},
		&proto.SetXattr{Ino: 257, Name: "user.empty"},
		&proto.ListXattr{Ino: 257},
		&proto.ListXattr{Ino: 257, Size: proto.XattrSizeMax},
		&proto.RemoveXattr{Ino: 257, Name: "user.a"},
	}
}

// replies pairs an op with one of its replies, covering every reply type.
func replies() []struct {
	op    proto.Op
	reply proto.Reply
} {
	a := sampleAttr
	return []struct {
		op    proto.Op
		reply proto.Reply
	}{
		{proto.OpLookup, &a},
		{proto.OpCreate, &proto.Attr{}},
		{proto.OpUnlink, &proto.Empty{}},
		{proto.OpSync, &proto.Empty{}},
		{proto.OpReadDir, &proto.ReadDirReply{}},
		{proto.OpReadDir, &proto.ReadDirReply{Entries: []proto.DirEntry{
			{Ino: 257, Cookie: 3, Type: 8, Name: "a"},
			{Ino: 258, Cookie: 4, Type: 4, Name: strings.Repeat("d", proto.NameLenMax)},
			{Ino: 259, Cookie: 1 << 63, Type: 8, Name: "é"},
		}}},
		{proto.OpStatFS, &proto.StatFSReply{BlockSize: 4096, NameMax: 255, Blocks: 1 << 30, BlocksFree: 1 << 29, BlocksAvail: 1 << 28, DirtyBytes: -1}},
		{proto.OpWrite, &proto.WriteReply{N: proto.IOSizeMax}},
		{proto.OpRead, &proto.ReadReply{}},
		{proto.OpRead, &proto.ReadReply{Data: []byte("data")}},
		{proto.OpGet, &proto.GetReply{Attr: a}},
		{proto.OpGet, &proto.GetReply{Attr: a, Data: bytes.Repeat([]byte{7}, int(a.Size))}},
		{proto.OpSymlink, &a},
		{proto.OpReadlink, &proto.ReadlinkReply{Target: "/a/b"}},
		{proto.OpReadlink, &proto.ReadlinkReply{Target: strings.Repeat("t", proto.SymlinkTargetMax)}},
		{proto.OpOpen, &proto.OpenReply{Handle: 1, Attr: a}},
		{proto.OpOpen, &proto.OpenReply{Handle: 1<<64 - 1}},
		{proto.OpRelease, &proto.Empty{}},
		{proto.OpGetXattr, &proto.XattrReply{Size: 5}},
		{proto.OpGetXattr, &proto.XattrReply{Size: 5, Data: []byte("value")}},
		{proto.OpListXattr, &proto.XattrReply{Size: 14, Data: []byte("user.a\x00user.b\x00")}},
		{proto.OpListXattr, &proto.XattrReply{Size: proto.XattrSizeMax, Data: bytes.Repeat([]byte{'n'}, proto.XattrSizeMax)}},
		{proto.OpSetXattr, &proto.Empty{}},
		{proto.OpRemoveXattr, &proto.Empty{}},
	}
}

// payloadOf returns the payload of a request as it goes on the wire.
func payloadOf(t testing.TB, req proto.Request) []byte {
	t.Helper()
	b, err := proto.AppendRequest(nil, 1, proto.Traceparent{}, req)
	if err != nil {
		t.Fatal(err)
	}
	f, err := proto.DecodeFrame(b)
	if err != nil {
		t.Fatal(err)
	}
	return f.Payload
}

// replyPayloadOf returns the payload of a reply as it goes on the wire.
func replyPayloadOf(t testing.TB, op proto.Op, r proto.Reply) []byte {
	t.Helper()
	b, err := proto.AppendResponse(nil, 1, op, proto.StatusOK, "", r)
	if err != nil {
		t.Fatal(err)
	}
	f, err := proto.DecodeFrame(b)
	if err != nil {
		t.Fatal(err)
	}
	return f.Payload
}

func readOne(b []byte, want proto.Kind, limit uint32) (proto.Frame, error) {
	return proto.ReadFrame(bufio.NewReader(bytes.NewReader(b)), want, limit, nil)
}

func bufioReader(r io.Reader) *bufio.Reader { return bufio.NewReader(r) }
