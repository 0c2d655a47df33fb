package proto_test

import (
	"bytes"
	"errors"
	"io"
	"syscall"
	"testing"

	"ustore/proto"
)

func TestHandshake_RoundTrip(t *testing.T) {
	hello := proto.ClientHello()
	h, err := proto.ReadHello(bytes.NewReader(proto.AppendHello(nil, hello)))
	if err != nil || h != hello {
		t.Fatalf("hello %+v, %v", h, err)
	}
	v, err := proto.Negotiate(h)
	if err != nil || v != proto.Version1 {
		t.Fatalf("version %d, %v", v, err)
	}
	rep := proto.HelloReply{Status: proto.StatusOK, Version: v, Limits: proto.Limits{FrameSizeMax: proto.FrameSizeMin, InflightMax: 64}}
	b, err := proto.AppendHelloReply(nil, rep)
	if err != nil || len(b) != proto.HelloReplySize {
		t.Fatalf("reply %x, %v", b, err)
	}
	got, err := proto.ReadHelloReply(bytes.NewReader(b), hello)
	if err != nil || got != rep {
		t.Fatalf("reply %+v, %v", got, err)
	}
}

func TestNegotiate_PicksHighestCommon(t *testing.T) {
	if v, err := proto.Negotiate(proto.Hello{VersionMin: 1, VersionMax: 9}); err != nil || v != proto.VersionMax {
		t.Fatalf("a newer client: %d, %v", v, err)
	}
	_, err := proto.Negotiate(proto.Hello{VersionMin: 2, VersionMax: 9})
	if !errors.Is(err, proto.ErrVersion) || proto.StatusOf(err) != proto.StatusVersion {
		t.Fatalf("no common version: %v", err)
	}
}

func TestReadHelloReply_Refused(t *testing.T) {
	b, err := proto.AppendHelloReply(nil, proto.HelloReply{Status: proto.StatusVersion})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := proto.ReadHelloReply(bytes.NewReader(b), proto.ClientHello())
	if rep.Status != proto.StatusVersion || !errors.Is(err, syscall.EPROTONOSUPPORT) {
		t.Fatalf("%+v, %v", rep, err)
	}
}

func TestHandshake_Malformed(t *testing.T) {
	okReply, _ := proto.AppendHelloReply(nil, proto.HelloReply{Status: proto.StatusOK, Version: 1, Limits: proto.MaxLimits()})
	withU16 := func(b []byte, off int, v uint16) []byte {
		b = bytes.Clone(b)
		copy(b[off:], le16(v))
		return b
	}
	withU32 := func(b []byte, off int, v uint32) []byte {
		b = bytes.Clone(b)
		copy(b[off:], le32(v))
		return b
	}
	hello := proto.AppendHello(nil, proto.ClientHello())
	for _, c := range []struct {
		name string
		in   []byte
	}{
		{"truncated", hello[:5]},
		{"bad magic", append([]byte("HTTP"), hello[4:]...)},
		{"version 0", withU16(withU16(hello, 4, 0), 6, 0)},
		{"empty range", withU16(withU16(hello, 4, 3), 6, 2)},
	} {
		if _, err := proto.ReadHello(bytes.NewReader(c.in)); !errors.Is(err, proto.ErrMalformed) {
			t.Errorf("hello %s: %v", c.name, err)
		}
	}
	if _, err := proto.ReadHello(bytes.NewReader(nil)); err != io.EOF {
		t.Errorf("no hello: %v", err)
	}
	for _, c := range []struct {
		name string
		in   []byte
	}{
		{"truncated", okReply[:15]},
		{"bad magic", append([]byte("USTQ"), okReply[4:]...)},
		{"unknown status", withU16(okReply, 4, 999)},
		{"version outside the client's range", withU16(okReply, 6, 2)},
		{"version 0", withU16(okReply, 6, 0)},
		{"failed with a version", withU16(okReply, 4, uint16(proto.StatusVersion))},
		{"frame size over", withU32(okReply, 8, proto.FrameSizeMax+1)},
		{"frame size under", withU32(okReply, 8, proto.FrameSizeMin-1)},
		{"in-flight 0", withU32(okReply, 12, 0)},
		{"in-flight over", withU32(okReply, 12, proto.InflightMax+1)},
	} {
		if _, err := proto.ReadHelloReply(bytes.NewReader(c.in), proto.ClientHello()); !errors.Is(err, proto.ErrMalformed) {
			t.Errorf("reply %s: %v", c.name, err)
		}
	}
	if _, err := proto.AppendHelloReply(nil, proto.HelloReply{Status: proto.StatusOK, Version: 1}); err == nil {
		t.Error("a reply with zero limits encodes")
	}
}
