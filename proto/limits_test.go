package proto_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"testing"

	"ustore/proto"
)

// TestReadFrame_HugeSizeAllocatesNothing: a header that claims 4 GiB, on a
// reader that holds 20 bytes, is refused from the header alone. The frame's
// buffer is never made: all that is allocated is the error's description,
// well under 4 KiB (the race detector's bookkeeping included), whatever the
// claimed size.
func TestReadFrame_HugeSizeAllocatesNothing(t *testing.T) {
	in := make([]byte, 20)
	binary.LittleEndian.PutUint32(in, 1<<32-1)
	in[4] = byte(proto.KindRequest)
	src := bytes.NewReader(in)
	r := bufio.NewReader(src)
	read := func() {
		src.Reset(in)
		r.Reset(src)
		if _, err := proto.ReadFrame(r, proto.KindRequest, proto.FrameSizeMax, nil); !errors.Is(err, proto.ErrMalformed) {
			t.Fatalf("a 4 GiB frame: %v", err)
		}
	}
	const runs = 1000
	read()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		read()
	}
	runtime.ReadMemStats(&after)
	if perRun := (after.TotalAlloc - before.TotalAlloc) / runs; perRun > 4096 {
		t.Fatalf("refusing a 4 GiB frame allocated %d bytes a time", perRun)
	}
	// The error's description: a handful of small objects, never the frame.
	if n := testing.AllocsPerRun(100, read); n > 10 {
		t.Fatalf("refusing a 4 GiB frame took %v allocations", n)
	}
}

// TestReadFrame_AllocatesNothing: a frame read into a buffer big enough
// for it, with a traceparent and data, allocates nothing.
func TestReadFrame_AllocatesNothing(t *testing.T) {
	in, err := proto.AppendRequest(nil, 9, sampleTrace, &proto.Write{Ino: 257, Off: 4096, Data: make([]byte, 64<<10)})
	if err != nil {
		t.Fatal(err)
	}
	src := bytes.NewReader(in)
	r := bufio.NewReader(src)
	buf := make([]byte, 0, proto.FrameSizeMax)
	n := testing.AllocsPerRun(100, func() {
		src.Reset(in)
		r.Reset(src)
		f, err := proto.ReadFrame(r, proto.KindRequest, proto.FrameSizeMax, buf)
		if err != nil || f.ID != 9 || len(f.Payload) != 20+64<<10 {
			t.Fatalf("%+v, %v", f.ID, err)
		}
	})
	if n != 0 {
		t.Fatalf("ReadFrame into a big enough buffer: %v allocations", n)
	}
}

// TestAppend_AllocatesNothing: the encoders append to a buffer with room
// and allocate nothing themselves.
func TestAppend_AllocatesNothing(t *testing.T) {
	buf := make([]byte, 0, proto.FrameSizeMax)
	var req proto.Request = &proto.Write{Ino: 257, Off: 4096, Data: make([]byte, 4096)}
	var reply proto.Reply = &proto.GetReply{Attr: proto.Attr{Size: 4096}, Data: make([]byte, 4096)}
	n := testing.AllocsPerRun(100, func() {
		b, err := proto.AppendRequest(buf[:0], 1, sampleTrace, req)
		if err != nil {
			t.Fatal(err)
		}
		if b, err = proto.AppendResponse(b, 1, proto.OpGet, proto.StatusOK, "", reply); err != nil {
			t.Fatal(err)
		}
		if _, err = proto.AppendResponse(b, 2, proto.OpGet, proto.StatusNotExist, "not there", nil); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Fatalf("appending frames: %v allocations", n)
	}
}

// TestDecodeReply_HugeCountAllocatesNothing: a readdir reply that claims
// 4 billion entries is refused before the entry slice is made.
func TestDecodeReply_HugeCountAllocatesNothing(t *testing.T) {
	in := le32(1<<32 - 1)
	decode := func() {
		if _, err := proto.DecodeReply(proto.OpReadDir, in); !errors.Is(err, proto.ErrMalformed) {
			t.Fatal(err)
		}
	}
	const runs = 1000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		decode()
	}
	runtime.ReadMemStats(&after)
	// The reply value and the error's description; never the entries
	// (4 billion of them would be hundreds of GiB).
	if perRun := (after.TotalAlloc - before.TotalAlloc) / runs; perRun > 4096 {
		t.Fatalf("refusing 4 billion entries allocated %d bytes a time", perRun)
	}
}

func TestLimits_Validate(t *testing.T) {
	if err := proto.MaxLimits().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, l := range []proto.Limits{
		{FrameSizeMax: proto.FrameSizeMax + 1, InflightMax: 1},
		{FrameSizeMax: proto.FrameSizeMin - 1, InflightMax: 1},
		{FrameSizeMax: proto.FrameSizeMin, InflightMax: 0},
		{FrameSizeMax: proto.FrameSizeMin, InflightMax: proto.InflightMax + 1},
	} {
		if err := l.Validate(); err == nil {
			t.Errorf("%+v validates", l)
		}
	}
	if err := (proto.Limits{FrameSizeMax: proto.FrameSizeMin, InflightMax: 1}).Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestLimits_IOSizeMax(t *testing.T) {
	if got := proto.MaxLimits().IOSizeMax(); got != proto.IOSizeMax {
		t.Fatalf("at the largest frame: %d", got)
	}
	for fs := uint32(proto.FrameSizeMin); fs <= proto.FrameSizeMax; fs += 4093 {
		l := proto.Limits{FrameSizeMax: fs, InflightMax: 1}
		io := l.IOSizeMax()
		if io%4096 != 0 || io == 0 || io > proto.IOSizeMax {
			t.Fatalf("frame %d: io size %d", fs, io)
		}
		// The biggest frames of that io size fit the frame size.
		put, err := proto.AppendRequest(nil, 1, sampleTrace, &proto.Put{Path: strings.Repeat("p", proto.PathLenMax), Data: make([]byte, io)})
		if err != nil || len(put) > int(fs) {
			t.Fatalf("frame %d: a put of %d bytes is a %d-byte frame (%v)", fs, io, len(put), err)
		}
		get, err := proto.AppendResponse(nil, 1, proto.OpGet, proto.StatusOK, "", &proto.GetReply{Attr: proto.Attr{Size: uint64(io)}, Data: make([]byte, io)})
		if err != nil || len(get) > int(fs) {
			t.Fatalf("frame %d: a get reply of %d bytes is a %d-byte frame (%v)", fs, io, len(get), err)
		}
	}
}

// TestLimits_LargestPayloadsFit builds the largest frame of each kind and
// checks the bounds limits.go claims.
func TestLimits_LargestPayloadsFit(t *testing.T) {
	entries := make([]proto.DirEntry, proto.ReadDirEntriesMax)
	for i := range entries {
		entries[i] = proto.DirEntry{Ino: 1, Name: strings.Repeat("x", proto.NameLenMax)}
	}
	rd, err := proto.AppendResponse(nil, 1, proto.OpReadDir, proto.StatusOK, "", &proto.ReadDirReply{Entries: entries})
	if err != nil || len(rd) != 279_574 || len(rd) > proto.FrameSizeMin {
		t.Fatalf("largest readdir reply: %d bytes (%v)", len(rd), err)
	}
	if _, err := proto.AppendResponse(nil, 1, proto.OpReadDir, proto.StatusOK, "", &proto.ReadDirReply{Entries: append(entries, proto.DirEntry{})}); err == nil {
		t.Fatal("a readdir reply over ReadDirEntriesMax encodes")
	}
	largest := 0
	for _, req := range requests() {
		b, err := proto.AppendRequest(nil, 1, sampleTrace, req)
		if err != nil {
			t.Fatal(err)
		}
		largest = max(largest, len(b))
	}
	if largest > proto.FrameSizeMax || largest < proto.IOSizeMax {
		t.Fatalf("largest request frame %d bytes", largest)
	}
	// Over the limits: refused by the encoder, with an errno a client returns.
	for _, req := range []proto.Request{
		&proto.Write{Data: make([]byte, proto.IOSizeMax+1)},
		&proto.Put{Path: "/a", Data: make([]byte, proto.IOSizeMax+1)},
		&proto.Lookup{Name: strings.Repeat("n", proto.NameLenMax+1)},
		&proto.Resolve{Path: strings.Repeat("p", proto.PathLenMax+1)},
		&proto.Symlink{Name: "l", Target: strings.Repeat("t", proto.SymlinkTargetMax+1)},
	} {
		dst := []byte("prefix")
		b, err := proto.AppendRequest(dst, 1, proto.Traceparent{}, req)
		if err == nil || string(b) != "prefix" {
			t.Fatalf("%v over its limit: %v, %q", req.Op(), err, b)
		}
	}
}
