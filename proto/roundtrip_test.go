package proto_test

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"ustore/proto"
)

func TestRequest_RoundTrip(t *testing.T) {
	seen := map[proto.Op]bool{}
	for i, req := range requests() {
		seen[req.Op()] = true
		for _, tp := range []proto.Traceparent{{}, sampleTrace} {
			b, err := proto.AppendRequest(nil, uint64(i+1), tp, req)
			if err != nil {
				t.Fatalf("%d %v: encode: %v", i, req.Op(), err)
			}
			f, err := readOne(b, proto.KindRequest, proto.FrameSizeMax)
			if err != nil {
				t.Fatalf("%d %v: read frame: %v", i, req.Op(), err)
			}
			if f.Kind != proto.KindRequest || f.ID != uint64(i+1) || f.Op != req.Op() || f.Trace != tp {
				t.Fatalf("%d %v: frame header %+v", i, req.Op(), f)
			}
			got, err := proto.DecodeRequest(f.Op, f.Payload)
			if err != nil {
				t.Fatalf("%d %v: decode: %v", i, req.Op(), err)
			}
			if !reflect.DeepEqual(got, req) {
				t.Fatalf("%d %v: decoded %+v, sent %+v", i, req.Op(), got, req)
			}
			again, err := proto.AppendRequest(nil, uint64(i+1), tp, got)
			if err != nil || !bytes.Equal(again, b) {
				t.Fatalf("%d %v: re-encoding differs (err %v)", i, req.Op(), err)
			}
		}
	}
	for op := proto.Op(1); op < 255; op++ {
		if op.Known() && !seen[op] {
			t.Errorf("no round-trip case for op %v", op)
		}
	}
}

func TestReply_RoundTrip(t *testing.T) {
	for i, c := range replies() {
		b, err := proto.AppendResponse(nil, uint64(i+1), c.op, proto.StatusOK, "", c.reply)
		if err != nil {
			t.Fatalf("%d %v: encode: %v", i, c.op, err)
		}
		f, err := readOne(b, proto.KindResponse, proto.FrameSizeMax)
		if err != nil {
			t.Fatalf("%d %v: read frame: %v", i, c.op, err)
		}
		if f.Kind != proto.KindResponse || f.ID != uint64(i+1) || f.Op != c.op || f.Status != proto.StatusOK || f.Message != "" {
			t.Fatalf("%d %v: frame header %+v", i, c.op, f)
		}
		got, err := proto.DecodeReply(f.Op, f.Payload)
		if err != nil {
			t.Fatalf("%d %v: decode: %v", i, c.op, err)
		}
		if !reflect.DeepEqual(got, c.reply) {
			t.Fatalf("%d %v: decoded %+v, sent %+v", i, c.op, got, c.reply)
		}
		again, err := proto.AppendResponse(nil, uint64(i+1), c.op, proto.StatusOK, "", got)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("%d %v: re-encoding differs (err %v)", i, c.op, err)
		}
	}
}

func TestResponse_RoundTripFailed(t *testing.T) {
	cases := []struct {
		id  uint64
		op  proto.Op
		s   proto.Status
		msg string
	}{
		{7, proto.OpLookup, proto.StatusNotExist, "lookup 256/x: no such file or directory"},
		{8, proto.OpWrite, proto.StatusNoSpace, ""},
		{9, 200, proto.StatusNoSys, "unknown op 200"},
		{0, 0, proto.StatusBadMessage, "proto: malformed: frame size 4294967295 is more than the limit"},
	}
	for _, c := range cases {
		b, err := proto.AppendResponse(nil, c.id, c.op, c.s, c.msg, nil)
		if err != nil {
			t.Fatal(err)
		}
		f, err := readOne(b, proto.KindResponse, proto.FrameSizeMin)
		if err != nil {
			t.Fatalf("%v: %v", c.s, err)
		}
		want := proto.Frame{Kind: proto.KindResponse, Op: c.op, ID: c.id, Status: c.s, Message: c.msg, Payload: []byte{}}
		if !reflect.DeepEqual(f, want) {
			t.Fatalf("got %+v, want %+v", f, want)
		}
		again, err := proto.AppendFrame(nil, &f)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("%v: AppendFrame differs (err %v)", c.s, err)
		}
	}
}

func TestAppendResponse_CutsLongMessage(t *testing.T) {
	msg := strings.Repeat("é", proto.MessageLenMax) // 2 bytes each: the cut falls mid-character
	b, err := proto.AppendResponse(nil, 1, proto.OpGet, proto.StatusIO, msg, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := proto.DecodeFrame(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Message) != proto.MessageLenMax || !strings.HasPrefix(msg, f.Message) {
		t.Fatalf("message cut to %d bytes", len(f.Message))
	}
	msg = strings.Repeat("a", proto.MessageLenMax-1) + "é"
	b, _ = proto.AppendResponse(nil, 1, proto.OpGet, proto.StatusIO, msg, nil)
	if f, _ = proto.DecodeFrame(b); f.Message != msg[:proto.MessageLenMax-1] {
		t.Fatalf("cut inside a character: %q", f.Message[len(f.Message)-2:])
	}
}

// TestFrame_Golden pins the bytes docs/PROTOCOL.md shows: a change here is
// a change of the wire format, which needs a new version.
func TestFrame_Golden(t *testing.T) {
	req, err := proto.AppendRequest(nil, 1, proto.Traceparent{}, &proto.Lookup{Dir: 256, Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	const wantReq = "1a000000" + "51" + "01" + "0000" + "0100000000000000" + "0001000000000000" + "01" + "61"
	if got := hex.EncodeToString(req); got != wantReq {
		t.Errorf("lookup request\n got %s\nwant %s", got, wantReq)
	}
	resp, err := proto.AppendResponse(nil, 1, proto.OpLookup, proto.StatusNotExist, "no", nil)
	if err != nil {
		t.Fatal(err)
	}
	const wantResp = "14000000" + "52" + "01" + "0100" + "0100000000000000" + "0200" + "6e6f"
	if got := hex.EncodeToString(resp); got != wantResp {
		t.Errorf("failed lookup response\n got %s\nwant %s", got, wantResp)
	}
	traced, _ := proto.AppendRequest(nil, 2, sampleTrace, &proto.Sync{})
	want := "47000000" + "51" + "0f" + "0100" + "0200000000000000" + hex.EncodeToString([]byte(sampleTrace.String()))
	if got := hex.EncodeToString(traced); got != want {
		t.Errorf("traced sync request\n got %s\nwant %s", got, want)
	}
	hello := proto.AppendHello(nil, proto.ClientHello())
	if got := hex.EncodeToString(hello); got != "555354500100"+"0100" {
		t.Errorf("hello %s", got)
	}
}

// TestPayload_Sizes pins the fixed payload sizes the documentation gives.
func TestPayload_Sizes(t *testing.T) {
	for _, c := range []struct {
		name string
		got  int
		want int
	}{
		{"attr", len(replyPayloadOf(t, proto.OpStat, &proto.Attr{})), 96},
		{"setattr", len(payloadOf(t, &proto.SetAttr{})), 56},
		{"statfs reply", len(replyPayloadOf(t, proto.OpStatFS, &proto.StatFSReply{})), 40},
		{"write header", len(payloadOf(t, &proto.Write{})), 20},
		{"read", len(payloadOf(t, &proto.Read{})), 20},
		{"fsync", len(payloadOf(t, &proto.Fsync{})), 9},
		{"open", len(payloadOf(t, &proto.Open{})), 8},
		{"open reply", len(replyPayloadOf(t, proto.OpOpen, &proto.OpenReply{})), 104},
		{"release", len(payloadOf(t, &proto.Release{})), 8},
		{"readdir", len(payloadOf(t, &proto.ReadDir{Max: 1})), 20},
	} {
		if c.got != c.want {
			t.Errorf("%s payload is %d bytes, documented %d", c.name, c.got, c.want)
		}
	}
}

// TestReadFrame_Pipelined reads several frames back to back from one
// reader, as a connection does, reusing one buffer.
func TestReadFrame_Pipelined(t *testing.T) {
	var stream []byte
	reqs := requests()
	for i, req := range reqs {
		var err error
		if stream, err = proto.AppendRequest(stream, uint64(100+i), proto.Traceparent{}, req); err != nil {
			t.Fatal(err)
		}
	}
	r := bufio.NewReader(bytes.NewReader(stream))
	buf := make([]byte, 0, proto.FrameSizeMax)
	for i, req := range reqs {
		f, err := proto.ReadFrame(r, proto.KindRequest, proto.FrameSizeMax, buf)
		if err != nil || f.ID != uint64(100+i) {
			t.Fatalf("frame %d: id %d, %v", i, f.ID, err)
		}
		got, err := proto.DecodeRequest(f.Op, f.Payload)
		if err != nil || !reflect.DeepEqual(got, req) {
			t.Fatalf("frame %d: %+v, %v", i, got, err)
		}
	}
	if _, err := proto.ReadFrame(r, proto.KindRequest, proto.FrameSizeMax, buf); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}
