package proto_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"testing"

	"ustore/proto"
)

// seedFrames are valid frames of every kind: each request with and without
// a traceparent, each reply, failed and connection-level responses.
func seedFrames(f *testing.F) [][]byte {
	var out [][]byte
	for _, req := range requests() {
		for _, tp := range []proto.Traceparent{{}, sampleTrace} {
			b, err := proto.AppendRequest(nil, 3, tp, req)
			if err != nil {
				f.Fatal(err)
			}
			if len(b) < 64<<10 { // the fuzzer mutates small inputs best
				out = append(out, b)
			}
		}
	}
	for _, c := range replies() {
		b, err := proto.AppendResponse(nil, 4, c.op, proto.StatusOK, "", c.reply)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) < 64<<10 {
			out = append(out, b)
		}
	}
	for _, s := range []proto.Status{proto.StatusNotExist, proto.StatusBadMessage} {
		b, _ := proto.AppendResponse(nil, 5, proto.OpLookup, s, "lookup 256/x", nil)
		out = append(out, b)
	}
	b, _ := proto.AppendResponse(nil, 0, 0, proto.StatusBadMessage, "bye", nil)
	return append(out, b)
}

// FuzzReadFrame: reading a frame never panics and never allocates past
// the limit; a frame it accepts re-encodes to exactly the bytes it read,
// and so does its payload when it decodes.
func FuzzReadFrame(f *testing.F) {
	for _, b := range seedFrames(f) {
		f.Add(b)
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 'Q', 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bufio.NewReader(bytes.NewReader(in))
		fr, err := proto.ReadFrame(r, 0, proto.FrameSizeMax, nil)
		if err != nil {
			if !errors.Is(err, proto.ErrMalformed) && err != io.EOF {
				t.Fatalf("an error that is neither ErrMalformed nor io.EOF: %v", err)
			}
			return
		}
		size := binary.LittleEndian.Uint32(in) // the frame read: its size field
		again, err := proto.AppendFrame(nil, &fr)
		if err != nil {
			t.Fatalf("a frame ReadFrame accepted does not encode: %v (%+v)", err, fr)
		}
		want := in[:size]
		if fr.Kind == proto.KindRequest && in[6]&byte(proto.FlagTraceparent) != 0 && fr.Trace.IsZero() {
			// A traceparent that does not parse is ignored: the frame
			// re-encodes without it.
			if _, err := proto.ParseTraceparent(string(in[16 : 16+proto.TraceparentLen])); err == nil {
				t.Fatalf("a valid traceparent was dropped: %q", in[16:16+proto.TraceparentLen])
			}
			want = append(append([]byte(nil), in[:16]...), in[16+proto.TraceparentLen:size]...)
			binary.LittleEndian.PutUint32(want, size-proto.TraceparentLen)
			want[6] &^= byte(proto.FlagTraceparent)
		}
		if !bytes.Equal(again, want) {
			t.Fatalf("re-encoded frame differs:\n in %x\nout %x", want, again)
		}
		switch {
		case fr.Kind == proto.KindRequest:
			checkRequest(t, fr.Op, fr.Payload)
		case fr.Status == proto.StatusOK:
			checkReply(t, fr.Op, fr.Payload)
		}
	})
}

// FuzzDecodeRequest: decoding a payload never panics; what decodes is
// valid, re-encodes to the same payload, and fits a frame.
func FuzzDecodeRequest(f *testing.F) {
	for _, req := range requests() {
		if p := payloadOf(f, req); len(p) < 64<<10 {
			f.Add(uint8(req.Op()), p)
		}
	}
	f.Add(uint8(0), []byte{})
	f.Add(uint8(proto.OpReadDir), []byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, op uint8, payload []byte) {
		checkRequest(t, proto.Op(op), payload)
	})
}

// FuzzDecodeReply: as FuzzDecodeRequest, for reply payloads.
func FuzzDecodeReply(f *testing.F) {
	for _, c := range replies() {
		if p := replyPayloadOf(f, c.op, c.reply); len(p) < 64<<10 {
			f.Add(uint8(c.op), p)
		}
	}
	f.Add(uint8(proto.OpReadDir), []byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, op uint8, payload []byte) {
		checkReply(t, proto.Op(op), payload)
	})
}

func checkRequest(t *testing.T, op proto.Op, payload []byte) {
	req, err := proto.DecodeRequest(op, payload)
	if err != nil {
		n := 0
		for _, e := range []error{proto.ErrMalformed, proto.ErrUnknownOp, proto.ErrOverLimit} {
			if errors.Is(err, e) {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("not exactly one of ErrMalformed, ErrUnknownOp and ErrOverLimit: %v", err)
		}
		if errors.Is(err, proto.ErrUnknownOp) != !op.Known() {
			t.Fatalf("op %d: %v", op, err)
		}
		if errors.Is(err, proto.ErrOverLimit) && op != proto.OpRead && op != proto.OpWrite && op != proto.OpPut {
			t.Fatalf("op %v over a limit: %v", op, err)
		}
		return
	}
	if req.Op() != op {
		t.Fatalf("op %v decoded as a %v", op, req.Op())
	}
	b, err := proto.AppendRequest(nil, 1, sampleTrace, req)
	if err != nil {
		t.Fatalf("a decoded %v does not encode: %v", op, err)
	}
	fr, err := proto.DecodeFrame(b)
	if err != nil || !bytes.Equal(fr.Payload, payload) {
		t.Fatalf("%v re-encodes differently (%v):\n in %x\nout %x", op, err, payload, fr.Payload)
	}
	again, err := proto.DecodeRequest(op, fr.Payload)
	if err != nil || !reflect.DeepEqual(again, req) {
		t.Fatalf("%v: second decode %+v (%v), first %+v", op, again, err, req)
	}
}

func checkReply(t *testing.T, op proto.Op, payload []byte) {
	rep, err := proto.DecodeReply(op, payload)
	if err != nil {
		if errors.Is(err, proto.ErrMalformed) == errors.Is(err, proto.ErrUnknownOp) {
			t.Fatalf("not exactly one of ErrMalformed and ErrUnknownOp: %v", err)
		}
		return
	}
	b, err := proto.AppendResponse(nil, 1, op, proto.StatusOK, "", rep)
	if err != nil {
		t.Fatalf("a decoded %v reply does not encode: %v", op, err)
	}
	fr, err := proto.DecodeFrame(b)
	if err != nil || !bytes.Equal(fr.Payload, payload) {
		t.Fatalf("%v reply re-encodes differently (%v):\n in %x\nout %x", op, err, payload, fr.Payload)
	}
}
