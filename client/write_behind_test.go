package client

import (
	"bytes"
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"ustore/proto"
)

// writeBehindFake is a fake server's connection and a write-behind writer
// of inode 7 on it, with at most inflight writes in flight.
func writeBehindFake(t *testing.T, inflight int) (*fakeConn, *WriteBehind) {
	t.Helper()
	f := newFake(t, maxLimits())
	c := f.dial(Options{})
	return f.accept(), c.WriteBehind(7, inflight)
}

// expectWrite reads the next request, which must be a write of inode 7 at
// off of n bytes.
func (fc *fakeConn) expectWrite(off uint64, n int) (proto.Frame, *proto.Write) {
	fc.t.Helper()
	fr, req := fc.request()
	w, ok := req.(*proto.Write)
	if !ok || w.Ino != 7 || w.Off != off || len(w.Data) != n {
		fc.t.Fatalf("fake: got %T %+v, want a write of %d bytes of inode 7 at %d", req, req, n, off)
	}
	return fr, w
}

// async runs f on a goroutine of its own; the channel has its error.
func async(f func() error) chan error {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	return ch
}

// TestWriteBehind_Pipelines_FsyncAfterReplies: writes go out without
// waiting for replies (the server reads three before answering any), and
// the fsync is sent only once all three are answered, in any order.
func TestWriteBehind_Pipelines_FsyncAfterReplies(t *testing.T) {
	fc, w := writeBehindFake(t, 8)
	ctx := context.Background()
	block := bytes.Repeat([]byte{1}, 4096)
	var frames []proto.Frame
	for i := range 3 {
		if err := w.WriteAt(ctx, block, uint64(i)*8192); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		fr, _ := fc.expectWrite(uint64(i)*8192, 4096)
		frames = append(frames, fr)
	}
	done := async(func() error { return w.Fsync(ctx, false) })
	fc.noRequest(50 * time.Millisecond)
	for _, i := range []int{2, 0, 1} {
		fc.respond(frames[i].ID, proto.OpWrite, proto.StatusOK, &proto.WriteReply{N: 4096})
	}
	fr, req := fc.request()
	if fs, ok := req.(*proto.Fsync); !ok || fs.Ino != 7 {
		t.Fatalf("after the writes' replies: got %T %+v, want the fsync of inode 7", req, req)
	}
	fc.respond(fr.ID, proto.OpFsync, proto.StatusOK, &proto.Empty{})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestWriteBehind_OverlapWaits: a write that overlaps one in flight is
// sent only after that one's reply (requests in flight may run in any
// order; the later data must win); one that does not overlap goes at once.
func TestWriteBehind_OverlapWaits(t *testing.T) {
	fc, w := writeBehindFake(t, 8)
	ctx := context.Background()
	if err := w.WriteAt(ctx, make([]byte, 4096), 0); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteAt(ctx, make([]byte, 4096), 8192); err != nil {
		t.Fatal(err)
	}
	a, _ := fc.expectWrite(0, 4096)
	c, _ := fc.expectWrite(8192, 4096)
	done := async(func() error { return w.WriteAt(ctx, make([]byte, 4096), 2048) })
	fc.noRequest(50 * time.Millisecond)
	fc.respond(a.ID, proto.OpWrite, proto.StatusOK, &proto.WriteReply{N: 4096})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	b, _ := fc.expectWrite(2048, 4096)
	fc.respond(c.ID, proto.OpWrite, proto.StatusOK, &proto.WriteReply{N: 4096})
	fc.respond(b.ID, proto.OpWrite, proto.StatusOK, &proto.WriteReply{N: 4096})
	if err := w.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestWriteBehind_InflightBound: past inflight writes in flight, a write
// waits for the oldest's reply.
func TestWriteBehind_InflightBound(t *testing.T) {
	fc, w := writeBehindFake(t, 2)
	ctx := context.Background()
	for i := range 2 {
		if err := w.WriteAt(ctx, make([]byte, 512), uint64(i)*4096); err != nil {
			t.Fatal(err)
		}
	}
	first, _ := fc.expectWrite(0, 512)
	second, _ := fc.expectWrite(4096, 512)
	done := async(func() error { return w.WriteAt(ctx, make([]byte, 512), 8192) })
	fc.noRequest(50 * time.Millisecond)
	fc.respond(first.ID, proto.OpWrite, proto.StatusOK, &proto.WriteReply{N: 512})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	third, _ := fc.expectWrite(8192, 512)
	fc.respond(second.ID, proto.OpWrite, proto.StatusOK, &proto.WriteReply{N: 512})
	fc.respond(third.ID, proto.OpWrite, proto.StatusOK, &proto.WriteReply{N: 512})
	if err := w.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestWriteBehind_ErrorSurfacesAtFsync: a write that failed is reported
// by the fsync, which is then not sent, and by every call after it, which
// send nothing either.
func TestWriteBehind_ErrorSurfacesAtFsync(t *testing.T) {
	fc, w := writeBehindFake(t, 8)
	ctx := context.Background()
	for i := range 2 {
		if err := w.WriteAt(ctx, make([]byte, 4096), uint64(i)*4096); err != nil {
			t.Fatal(err)
		}
	}
	first, _ := fc.expectWrite(0, 4096)
	second, _ := fc.expectWrite(4096, 4096)
	fc.respond(first.ID, proto.OpWrite, proto.StatusNoSpace, nil)
	fc.respond(second.ID, proto.OpWrite, proto.StatusOK, &proto.WriteReply{N: 4096})
	err := w.Fsync(ctx, false)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("fsync after a failed write: %v, want ENOSPC", err)
	}
	if err := w.WriteAt(ctx, make([]byte, 4096), 8192); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a write after the failure: %v, want the first error again", err)
	}
	if err := w.Close(ctx); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("close after the failure: %v, want the first error again", err)
	}
	fc.noRequest(50 * time.Millisecond)
}

// TestWriteBehind_ShortReply_WritesTheRest: a short reply is completed
// with a write of the rest, from the writer's copy of the data (the
// caller's buffer was reused at once).
func TestWriteBehind_ShortReply_WritesTheRest(t *testing.T) {
	fc, w := writeBehindFake(t, 8)
	ctx := context.Background()
	data := bytes.Repeat([]byte("abcdefgh"), 512)
	want := bytes.Clone(data)
	if err := w.WriteAt(ctx, data, 4096); err != nil {
		t.Fatal(err)
	}
	clear(data) // the caller's buffer is its own again
	fr, _ := fc.expectWrite(4096, 4096)
	done := async(func() error { return w.Wait(ctx) })
	fc.respond(fr.ID, proto.OpWrite, proto.StatusOK, &proto.WriteReply{N: 1000})
	rest, req := fc.expectWrite(5096, 4096-1000)
	if !bytes.Equal(req.Data, want[1000:]) {
		t.Fatal("the rest of a short write is not the data the caller wrote")
	}
	fc.respond(rest.ID, proto.OpWrite, proto.StatusOK, &proto.WriteReply{N: 4096 - 1000})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
