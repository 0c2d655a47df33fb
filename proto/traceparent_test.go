package proto_test

import (
	"errors"
	"testing"

	"ustore/proto"
)

func TestTraceparent_Parse(t *testing.T) {
	const s = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tp, err := proto.ParseTraceparent(s)
	if err != nil || tp.String() != s || tp.Flags != 1 || tp.TraceID[0] != 0x4b || tp.ParentID[7] != 0xb7 {
		t.Fatalf("%+v, %v", tp, err)
	}
	if (proto.Traceparent{}).String() != "" || !(proto.Traceparent{}).IsZero() {
		t.Fatal("the zero traceparent")
	}
	for _, bad := range []string{
		"",
		s[:54],
		s + "0",
		"01" + s[2:],
		"ff" + s[2:],
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
	} {
		if _, err := proto.ParseTraceparent(bad); !errors.Is(err, proto.ErrMalformed) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestAppendRequest_RefusesHalfTraceparent(t *testing.T) {
	half := proto.Traceparent{TraceID: [16]byte{1}}
	if _, err := proto.AppendRequest(nil, 1, half, &proto.Sync{}); err == nil {
		t.Fatal("a traceparent with a zero parent id encodes")
	}
	if _, err := proto.AppendRequest(nil, 0, proto.Traceparent{}, &proto.Sync{}); err == nil {
		t.Fatal("request id 0 encodes")
	}
}
