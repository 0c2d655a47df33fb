package proto_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	"ustore/proto"
)

// frameBytes builds a frame by hand, for inputs no encoder would write.
func frameBytes(kind proto.Kind, op proto.Op, aux uint16, id uint64, rest []byte) []byte {
	b := make([]byte, 16, 16+len(rest))
	binary.LittleEndian.PutUint32(b, uint32(16+len(rest)))
	b[4], b[5] = byte(kind), byte(op)
	binary.LittleEndian.PutUint16(b[6:], aux)
	binary.LittleEndian.PutUint64(b[8:], id)
	return append(b, rest...)
}

func le16(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }
func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func le64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestReadFrame_Malformed(t *testing.T) {
	good, _ := proto.AppendRequest(nil, 5, sampleTrace, &proto.Stat{Ino: 256})
	withSize := func(b []byte, size uint32) []byte {
		b = bytes.Clone(b)
		binary.LittleEndian.PutUint32(b, size)
		return b
	}
	cases := []struct {
		name string
		in   []byte
		want proto.Kind
		msg  string // in the error
	}{
		{"truncated header", good[:10], proto.KindRequest, "truncated"},
		{"truncated body", good[:len(good)-1], proto.KindRequest, "truncated"},
		{"truncated traceparent", withSize(good[:40], 40), proto.KindRequest, "traceparent overruns"},
		{"kind unknown", cat([]byte{20, 0, 0, 0, 'X'}, make([]byte, 15)), proto.KindRequest, "neither request nor response"},
		{"kind unexpected", frameBytes(proto.KindResponse, 1, 0, 1, []byte{0, 0}), proto.KindRequest, "expected"},
		{"size absurd", withSize(good, 1<<32-1), proto.KindRequest, "more than the limit"},
		{"size over negotiated", withSize(good, proto.FrameSizeMin+1), proto.KindRequest, "more than the limit"},
		{"size under header", withSize(good, 15), proto.KindRequest, "less than its header"},
		{"response size under header", frameBytes(proto.KindResponse, 1, 0, 1, nil), proto.KindResponse, "less than its header"},
		{"request id 0", frameBytes(proto.KindRequest, proto.OpSync, 0, 0, nil), proto.KindRequest, "id 0"},
		{"unknown flag", frameBytes(proto.KindRequest, proto.OpSync, 2, 1, nil), proto.KindRequest, "unknown request flags"},
		{"unknown status", frameBytes(proto.KindResponse, 1, 999, 1, le16(0)), proto.KindResponse, "unknown status"},
		{"OK with message", frameBytes(proto.KindResponse, 1, 0, 1, cat(le16(1), []byte("x"))), proto.KindResponse, "message with status OK"},
		{"failure with payload", frameBytes(proto.KindResponse, 1, 1, 1, cat(le16(0), []byte("x"))), proto.KindResponse, "payload bytes with status"},
		{"message overruns", frameBytes(proto.KindResponse, 1, 1, 1, cat(le16(10), []byte("abc"))), proto.KindResponse, "overruns"},
		{"message too long", frameBytes(proto.KindResponse, 1, 1, 1, cat(le16(proto.MessageLenMax+1), make([]byte, proto.MessageLenMax+1))), proto.KindResponse, "more than"},
		{"id 0 with OK", frameBytes(proto.KindResponse, 0, 0, 0, le16(0)), proto.KindResponse, "connection-level"},
		{"id 0 with an op", frameBytes(proto.KindResponse, 1, 21, 0, le16(0)), proto.KindResponse, "connection-level"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := readOne(c.in, c.want, proto.FrameSizeMin)
			if !errors.Is(err, proto.ErrMalformed) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("got %v, want ErrMalformed saying %q", err, c.msg)
			}
			if proto.StatusOf(err) != proto.StatusBadMessage {
				t.Fatalf("status %v", proto.StatusOf(err))
			}
		})
	}
}

func TestReadFrame_EOF(t *testing.T) {
	if _, err := readOne(nil, proto.KindRequest, proto.FrameSizeMax); err != io.EOF {
		t.Fatalf("empty stream: %v, want io.EOF", err)
	}
	good, _ := proto.AppendRequest(nil, 5, proto.Traceparent{}, &proto.Stat{Ino: 256})
	_, err := readOne(good[:20], proto.KindRequest, proto.FrameSizeMax)
	if !errors.Is(err, io.ErrUnexpectedEOF) || !errors.Is(err, proto.ErrMalformed) {
		t.Fatalf("frame cut short: %v", err)
	}
}

// failingReader fails after its data with an error that is not EOF.
type failingReader struct{ data []byte }

var errBroken = errors.New("broken pipe")

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, errBroken
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestReadFrame_ReaderErrorPassesThrough(t *testing.T) {
	good, _ := proto.AppendRequest(nil, 5, proto.Traceparent{}, &proto.Write{Ino: 1, Data: make([]byte, 8000)})
	for _, n := range []int{0, 10, 5000} {
		_, err := proto.ReadFrame(bufioReader(&failingReader{data: good[:n]}), proto.KindRequest, proto.FrameSizeMax, nil)
		if !errors.Is(err, errBroken) || errors.Is(err, proto.ErrMalformed) {
			t.Fatalf("after %d bytes: %v, want the reader's error", n, err)
		}
	}
}

func TestDecodeFrame_SizeMismatch(t *testing.T) {
	good, _ := proto.AppendRequest(nil, 5, proto.Traceparent{}, &proto.Stat{Ino: 256})
	for _, b := range [][]byte{append(bytes.Clone(good), 0), good[:len(good)-1], good[:3]} {
		if _, err := proto.DecodeFrame(b); !errors.Is(err, proto.ErrMalformed) {
			t.Fatalf("%x: %v", b, err)
		}
	}
}

func TestDecodeRequest_Malformed(t *testing.T) {
	attr := payloadOf(t, &proto.SetAttr{Ino: 1})
	cases := []struct {
		name string
		op   proto.Op
		in   []byte
		msg  string
	}{
		{"empty", proto.OpStat, nil, "needs 8 bytes, 0 left"},
		{"truncated", proto.OpStat, make([]byte, 7), "needs 8 bytes, 7 left"},
		{"trailing bytes", proto.OpStat, make([]byte, 9), "1 trailing bytes"},
		{"trailing after empty", proto.OpSync, []byte{0}, "trailing"},
		{"name overruns", proto.OpLookup, cat(le64(256), []byte{200}, []byte("short")), "name length 200 overruns the payload (5 bytes left)"},
		{"name length missing", proto.OpLookup, le64(256), "name length needs 1 bytes"},
		{"second name overruns", proto.OpRename, cat(le64(1), le64(2), []byte{1, 'a', 2, 'b'}), "destination name length 2 overruns"},
		{"rename2 flags missing", proto.OpRename2, cat(le64(1), le64(2), []byte{1, 'a', 1, 'b'}, []byte{1, 0}), "flags needs 4 bytes, 2 left"},
		{"fallocate len missing", proto.OpFallocate, cat(le64(1), le32(0), le64(0)), "len needs 8 bytes, 0 left"},
		{"path overruns", proto.OpResolve, cat(le16(100), []byte("/a")), "path length 100 overruns"},
		{"path too long", proto.OpGet, cat(le16(proto.PathLenMax+1), make([]byte, proto.PathLenMax+1)), "more than 4096"},
		{"path length absurd", proto.OpResolve, le16(0xffff), "more than 4096"},
		{"bool not 0 or 1", proto.OpFsync, cat(le64(1), []byte{2}), "datasync is 2"},
		{"put bool", proto.OpPut, cat(le16(1), []byte("/"), []byte{7}), "fsync is 7"},
		{"readdir max 0", proto.OpReadDir, cat(le64(256), le64(0), le32(0)), "max 0"},
		{"readdir max over", proto.OpReadDir, cat(le64(256), le64(0), le32(proto.ReadDirEntriesMax+1)), "max 1025"},
		{"setattr unknown mask", proto.OpSetAttr, cat(le64(1), le32(1<<6), attr[12:]), "unknown mask"},
		{"setattr unset field", proto.OpSetAttr, cat(le64(1), le32(0), le32(0o644), attr[16:]), "not in the mask"},
		{"setattr nanoseconds", proto.OpSetAttr, cat(le64(1), le32(uint32(proto.SetAtime)), attr[12:32], le64(0), le32(1e9), attr[44:]), "nanoseconds"},
		{"create perm type bits", proto.OpCreate, cat(le64(256), le32(0o100644), []byte{1, 'f'}), "bits outside"},
		{"write unknown flag", proto.OpWrite, cat(le64(1), le64(0), le32(4)), "unknown flags"},
		{"symlink target too long", proto.OpSymlink, cat(le64(256), []byte{1, 'l'}, le16(proto.PathLenMax), make([]byte, proto.PathLenMax)), "target is 4096 bytes, more than 4095"},
		{"symlink target overruns", proto.OpSymlink, cat(le64(256), []byte{1, 'l'}, le16(10), []byte("ab")), "target length 10 overruns"},
		{"setxattr unknown flag", proto.OpSetXattr, cat(le64(1), le32(4), []byte{1, 'a'}), "unknown flags"},
		{"setxattr value over", proto.OpSetXattr, cat(le64(1), le32(0), []byte{1, 'a'}, make([]byte, proto.XattrSizeMax+1)), "more than 65536"},
		{"getxattr size over", proto.OpGetXattr, cat(le64(1), le32(proto.XattrSizeMax+1), []byte{1, 'a'}), "more than 65536"},
		{"getxattr name overruns", proto.OpGetXattr, cat(le64(1), le32(0), []byte{3, 'a'}), "name length 3 overruns"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := proto.DecodeRequest(c.op, c.in)
			if !errors.Is(err, proto.ErrMalformed) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("got %v, want ErrMalformed saying %q", err, c.msg)
			}
		})
	}
}

// TestReadFrame_TraceparentIgnored: a traceparent that is not a valid W3C
// one (another version, uppercase hex, an all-zero id, wrong separators)
// is ignored, never an error (docs/TRACING.md): the frame decodes without
// it and its payload still starts after its 55 bytes.
func TestReadFrame_TraceparentIgnored(t *testing.T) {
	tp := []byte(sampleTrace.String())
	stat := le64(256)
	for _, c := range []struct{ name, tp string }{
		{"version", "01" + string(tp[2:])},
		{"uppercase", strings.ToUpper(string(tp))},
		{"zero trace id", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"},
		{"zero parent id", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"},
		{"dashes", "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := readOne(frameBytes(proto.KindRequest, proto.OpStat, 1, 1, cat([]byte(c.tp), stat)), proto.KindRequest, proto.FrameSizeMin)
			if err != nil {
				t.Fatal(err)
			}
			if !f.Trace.IsZero() {
				t.Fatalf("trace %v, want none", f.Trace)
			}
			req, err := proto.DecodeRequest(f.Op, f.Payload)
			if err != nil || req.(*proto.Stat).Ino != 256 {
				t.Fatalf("payload after the ignored traceparent: %+v, %v", req, err)
			}
		})
	}
}

// TestDecodeRequest_OverLimit: data or a read length over IOSizeMax in a
// payload that decodes is ErrOverLimit with EINVAL, not ErrMalformed: the
// server answers it and keeps the connection.
func TestDecodeRequest_OverLimit(t *testing.T) {
	for _, c := range []struct {
		name string
		op   proto.Op
		in   []byte
	}{
		{"write too much data", proto.OpWrite, cat(le64(1), le64(0), le32(0), make([]byte, proto.IOSizeMax+1))},
		{"read too long", proto.OpRead, cat(le64(1), le64(0), le32(2*proto.IOSizeMax))},
		{"read length absurd", proto.OpRead, cat(le64(1), le64(0), le32(1<<32-1))},
		{"put too much data", proto.OpPut, cat(le16(2), []byte("/a"), []byte{0}, make([]byte, proto.IOSizeMax+1))},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := proto.DecodeRequest(c.op, c.in)
			if !errors.Is(err, proto.ErrOverLimit) || errors.Is(err, proto.ErrMalformed) || !strings.Contains(err.Error(), "more than 1048576") {
				t.Fatalf("got %v, want ErrOverLimit", err)
			}
			if s := proto.StatusOf(err); s != proto.StatusInvalid {
				t.Fatalf("status %v, want EINVAL", s)
			}
		})
	}
}

func TestDecodeRequest_UnknownOp(t *testing.T) {
	for _, op := range []proto.Op{0, 29, 255} {
		_, err := proto.DecodeRequest(op, nil)
		if !errors.Is(err, proto.ErrUnknownOp) || errors.Is(err, proto.ErrMalformed) {
			t.Fatalf("op %d: %v", op, err)
		}
		if proto.StatusOf(err) != proto.StatusNoSys {
			t.Fatalf("op %d: status %v, want ENOSYS", op, proto.StatusOf(err))
		}
		if _, err := proto.DecodeReply(op, nil); !errors.Is(err, proto.ErrUnknownOp) {
			t.Fatalf("reply of op %d: %v", op, err)
		}
	}
	// An unknown op is framed like any other: the frame reads fine.
	f, err := readOne(frameBytes(proto.KindRequest, 200, 0, 9, []byte("xyz")), proto.KindRequest, proto.FrameSizeMax)
	if err != nil || f.Op != 200 || f.ID != 9 {
		t.Fatalf("frame of an unknown op: %+v, %v", f, err)
	}
}

func TestDecodeReply_Malformed(t *testing.T) {
	attr := replyPayloadOf(t, proto.OpStat, &sampleAttr)
	cases := []struct {
		name string
		op   proto.Op
		in   []byte
		msg  string
	}{
		{"attr truncated", proto.OpStat, attr[:95], "needs"},
		{"attr trailing", proto.OpStat, cat(attr, []byte{0}), "trailing"},
		{"attr nanoseconds", proto.OpStat, cat(attr[:92], le32(1e9)), "nanoseconds"},
		{"empty with bytes", proto.OpUnlink, []byte{1}, "trailing"},
		{"readdir count absurd", proto.OpReadDir, le32(1<<32 - 1), "more than 1024"},
		{"readdir count overruns", proto.OpReadDir, cat(le32(2), make([]byte, 18)), "2 entries overrun"},
		{"readdir name overruns", proto.OpReadDir, cat(le32(1), le64(1), le64(2), []byte{8, 5, 'a'}), "entry name length 5 overruns"},
		{"statfs truncated", proto.OpStatFS, make([]byte, 39), "needs"},
		{"write count over", proto.OpWrite, le32(proto.IOSizeMax + 1), "more than"},
		{"read too much", proto.OpRead, make([]byte, proto.IOSizeMax+1), "more than"},
		{"readlink empty target", proto.OpReadlink, le16(0), "empty target"},
		{"readlink target too long", proto.OpReadlink, cat(le16(proto.PathLenMax), make([]byte, proto.PathLenMax)), "more than 4095"},
		{"xattr data not its size", proto.OpGetXattr, cat(le32(3), []byte("ab")), "2 bytes says its size is 3"},
		{"xattr size over", proto.OpListXattr, le32(proto.XattrSizeMax + 1), "more than 65536"},
		{"get data past size", proto.OpGet, cat(replyPayloadOf(t, proto.OpStat, &proto.Attr{Size: 1}), []byte("ab")), "2 bytes for a file of 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := proto.DecodeReply(c.op, c.in)
			if !errors.Is(err, proto.ErrMalformed) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("got %v, want ErrMalformed saying %q", err, c.msg)
			}
		})
	}
}
