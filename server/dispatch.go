package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"syscall"
	"time"

	"ustore/internal/assert"
	"ustore/proto"
	"ustore/store"
	"ustore/trace"
)

// traceparentKey carries a request's traceparent in its context.
type traceparentKey struct{}

// Traceparent returns the W3C traceparent ("00-…") that the request served
// under ctx carried, or "" if it carried none. The server's span for the
// request continues that trace.
func Traceparent(ctx context.Context) string {
	s, _ := ctx.Value(traceparentKey{}).(string)
	return s
}

// startRequest makes a request's context: the connection's (cancelled when
// the peer is gone or a shutdown is forced) with the frame's traceparent.
// It is the tracing seam: the request's span ("ustore.<op>") starts here,
// and requestTrace.end, called with the request's outcome, ends it.
//
// The reader calls it, before it hands the request on: the sampler's
// decision and the SDK's span start then run on the reader's stack, which
// has long grown, instead of near the top of the request goroutine's new
// 2 KiB stack, where they made the runtime copy that stack on every request
// (runtime.newstack was 19–36 % of the server's CPU at 1 % sampling,
// docs/BENCHMARKS.md "Tracing cost"). The span's time therefore includes
// the hand-off to the request's goroutine, which the client waits for too.
func (c *conn) startRequest(req proto.Request, tp proto.Traceparent) (context.Context, requestTrace) {
	op := req.Op()
	ctx := c.ctx
	if !tp.IsZero() {
		s := tp.String()
		ctx = context.WithValue(ctx, traceparentKey{}, s)
		ctx = trace.ContextWithRemoteParent(ctx, s)
	}
	rt := requestTrace{op: op, start: time.Now()}
	ctx, rt.span = trace.Start(ctx, spanName(op), trace.Op(op.String()))
	if rt.span.IsRecording() {
		setRequestAttrs(rt.span, req)
	}
	return ctx, rt
}

// requestTrace is a request's span and the start of its latency.
type requestTrace struct {
	op    proto.Op
	start time.Time
	span  trace.Span
}

// bind binds the span to the calling goroutine, the one that serves the
// request, so that its lock waits name the span (eBPF); unbind it before
// end.
func (rt requestTrace) bind() trace.Binding { return rt.span.Bind() }

// end records the request's outcome on its span, ends it, and records its
// latency.
func (rt requestTrace) end(reply proto.Reply, err error) {
	endRequestSpan(rt.span, reply, err)
	rt.span.End()
	trace.RecordRequest(rt.op.String(), requestStatus(err), time.Since(rt.start))
}

// requestStatus is a request's status label on /metrics: "ok", or the
// name of the errno the client is answered ("ENOENT"), as StatusOf maps
// err.
func requestStatus(err error) string {
	if s := proto.StatusOf(err); s != proto.StatusOK {
		return s.String()
	}
	return "ok"
}

// spanNames are the request spans' names, "ustore.<op>", made once.
var spanNames = func() map[proto.Op]string {
	m := map[proto.Op]string{}
	for op := proto.Op(0); op < 64; op++ {
		if op.Known() {
			m[op] = "ustore." + op.String()
		}
	}
	return m
}()

func spanName(op proto.Op) string {
	if s, ok := spanNames[op]; ok {
		return s
	}
	return "ustore.unknown"
}

// run serves one request on its own goroutine, under the context and span
// startRequest made, and hands its response to the writer. reqBuf holds
// the request's frame (a write's data aliases it).
func (c *conn) run(ctx context.Context, rt requestTrace, id uint64, req proto.Request, reqBuf *[]byte, limits proto.Limits, charge int64) {
	defer c.workers.Done()
	reply, out, err := c.serveRequest(ctx, rt, req, limits, nil)
	proto.PutBuffer(reqBuf)
	c.respond(id, req.Op(), out, reply, err, charge)
}

// serveRequest runs req on the store, on the calling goroutine (a
// request's worker, or the reader for a request that runs inline), and
// ends its span. out, when not nil, is the buffer its response is to be
// encoded into (responseBuffer). served, when not nil, is req's outcome
// already made (a read the reader answered from memory, conn_inline.go):
// the test hook and filter still see req, but the store is not called
// again.
func (c *conn) serveRequest(ctx context.Context, rt requestTrace, req proto.Request, limits proto.Limits, served *servedReply) (proto.Reply, *[]byte, error) {
	binding := rt.bind()
	if h := c.s.testHook; h != nil {
		h(ctx, req)
	}
	var (
		reply proto.Reply
		out   *[]byte
		err   error
	)
	if f := c.s.testFilter.Load(); f != nil {
		err = (*f)(ctx, req)
	}
	switch {
	case served != nil:
		reply, out = served.reply, served.out
		if err == nil {
			err = served.err
		}
		if err != nil {
			reply = nil
		}
	case err == nil:
		reply, out, err = c.dispatch(ctx, req, limits)
	}
	binding.Unbind()
	rt.end(reply, err)
	if out == nil {
		// Taken at its largest (a readdir's entries), so that encoding
		// never grows it.
		out = proto.GetBuffer(replySizeMax(req, limits))
	}
	return reply, out, err
}

// emptyReply is the reply of the ops that answer only their status. It is
// never changed.
var emptyReply = &proto.Empty{}

// dispatch runs req on the store. out, when not nil, is the buffer the
// response is to be encoded into: a read's or get's data was read into it
// at its place in the response frame.
func (s *Server) dispatch(ctx context.Context, req proto.Request, limits proto.Limits) (_ proto.Reply, out *[]byte, _ error) {
	st := s.st
	switch r := req.(type) {
	case *proto.Lookup:
		return attrReply(st.Lookup(store.Ino(r.Dir), r.Name))
	case *proto.Create:
		return attrReply(st.Create(store.Ino(r.Dir), r.Name, r.Perm))
	case *proto.Mkdir:
		return attrReply(st.Mkdir(store.Ino(r.Dir), r.Name, r.Perm))
	case *proto.Link:
		return attrReply(st.Link(store.Ino(r.Ino), store.Ino(r.Dir), r.Name))
	case *proto.Unlink:
		return emptyOr(st.Unlink(store.Ino(r.Dir), r.Name))
	case *proto.Rmdir:
		return emptyOr(st.Rmdir(store.Ino(r.Dir), r.Name))
	case *proto.Rename:
		return emptyOr(st.Rename(store.Ino(r.SrcDir), r.SrcName, store.Ino(r.DstDir), r.DstName))
	case *proto.Rename2:
		return emptyOr(st.Rename2(store.Ino(r.SrcDir), r.SrcName, store.Ino(r.DstDir), r.DstName, r.Flags))
	case *proto.Fallocate:
		// Offsets past 2^63 arrive negative: the store's EINVAL, as
		// fallocate(2)'s for a negative loff_t.
		return attrReply(st.Fallocate(store.Ino(r.Ino), r.Mode, int64(r.Off), int64(r.Len)))
	case *proto.ReadDir:
		return readDir(st, r)
	case *proto.Stat:
		return attrReply(st.Stat(store.Ino(r.Ino)))
	case *proto.SetAttr:
		return attrReply(st.SetAttr(store.Ino(r.Ino), setAttrOf(r)))
	case *proto.StatFS:
		f := st.StatFS()
		return &proto.StatFSReply{BlockSize: f.BlockSize, NameMax: f.NameMax, Blocks: f.Blocks,
			BlocksFree: f.BlocksFree, BlocksAvail: f.BlocksAvail, DirtyBytes: f.DirtyBytes}, nil, nil
	case *proto.Write:
		return write(ctx, st, r, limits)
	case *proto.Read:
		return read(st, r, limits)
	case *proto.Fsync:
		return emptyOr(st.Fsync(ctx, store.Ino(r.Ino), r.Datasync))
	case *proto.Sync:
		return emptyOr(st.Sync(ctx))
	case *proto.Resolve:
		return attrReply(st.Resolve(r.Path))
	case *proto.Put:
		if len(r.Data) > int(limits.IOSizeMax()) {
			return nil, nil, tooBig("put", len(r.Data), limits)
		}
		return attrReply(st.Put(ctx, r.Path, r.Data, r.Fsync))
	case *proto.Get:
		return get(st, r, limits)
	case *proto.Open, *proto.Release:
		// The connection's (conn.dispatch, conn_handles.go).
		assert.That(false, "server: a handle op outside its connection")
	case *proto.Symlink:
		return attrReply(st.Symlink(store.Ino(r.Dir), r.Name, r.Target))
	case *proto.Readlink:
		target, err := st.Readlink(store.Ino(r.Ino))
		if err != nil {
			return nil, nil, err
		}
		return &proto.ReadlinkReply{Target: target}, nil, nil
	case *proto.GetXattr:
		return getXattr(st, r)
	case *proto.SetXattr:
		return emptyOr(st.SetXattr(store.Ino(r.Ino), r.Name, r.Value, r.Flags))
	case *proto.ListXattr:
		return listXattr(st, r)
	case *proto.RemoveXattr:
		return emptyOr(st.RemoveXattr(store.Ino(r.Ino), r.Name))
	}
	// DecodeRequest returns only the types above.
	assert.That(false, "server: a request of an op the dispatcher does not know")
	return nil, nil, syscall.ENOSYS
}

func attrReply(a store.Attr, err error) (proto.Reply, *[]byte, error) {
	if err != nil {
		return nil, nil, err
	}
	pa := attrOf(a)
	return &pa, nil, nil
}

func emptyOr(err error) (proto.Reply, *[]byte, error) {
	if err != nil {
		return nil, nil, err
	}
	return emptyReply, nil, nil
}

// The flag and mode values pass from the protocol to the store as they
// are: the same Linux values on both sides (an index out of range if not).
var (
	_ = [1]struct{}{}[proto.RenameNoReplace^store.RenameNoReplace|proto.RenameExchange^store.RenameExchange]
	_ = [1]struct{}{}[proto.FallocKeepSize^store.FallocKeepSize|proto.FallocPunchHole^store.FallocPunchHole]
)

func attrOf(a store.Attr) proto.Attr {
	return proto.Attr{
		Ino: uint64(a.Ino), Mode: a.Mode, Nlink: a.Nlink, UID: a.UID, GID: a.GID,
		Size: a.Size, Blocks: a.Blocks, Generation: uint64(a.Generation),
		Atime: proto.TimespecOf(a.Atime), Mtime: proto.TimespecOf(a.Mtime),
		Ctime: proto.TimespecOf(a.Ctime), Btime: proto.TimespecOf(a.Btime),
	}
}

func setAttrOf(r *proto.SetAttr) store.SetAttr {
	var a store.SetAttr
	if r.Mask&proto.SetMode != 0 {
		a.Mode = &r.Mode
	}
	if r.Mask&proto.SetUID != 0 {
		a.UID = &r.UID
	}
	if r.Mask&proto.SetGID != 0 {
		a.GID = &r.GID
	}
	if r.Mask&proto.SetSize != 0 {
		a.Size = &r.Size
	}
	if r.Mask&proto.SetAtime != 0 {
		t := r.Atime.Time()
		a.Atime = &t
	}
	if r.Mask&proto.SetMtime != 0 {
		t := r.Mtime.Time()
		a.Mtime = &t
	}
	return a
}

func readDir(st *store.Store, r *proto.ReadDir) (proto.Reply, *[]byte, error) {
	es, err := st.ReadDir(store.Ino(r.Dir), r.Cookie, int(r.Max))
	if err != nil {
		return nil, nil, err
	}
	rep := &proto.ReadDirReply{Entries: make([]proto.DirEntry, len(es))}
	for i, e := range es {
		rep.Entries[i] = proto.DirEntry{Ino: uint64(e.Ino), Cookie: e.Cookie, Type: e.Type, Name: e.Name}
	}
	return rep, nil, nil
}

// tooBig is the error for data or a read length over the connection's
// IOSizeMax: well-framed, so EINVAL and the connection goes on.
func tooBig(op string, n int, limits proto.Limits) error {
	return fmt.Errorf("%s of %d bytes, more than this connection's %d: %w", op, n, limits.IOSizeMax(), syscall.EINVAL)
}

// write writes, and with a sync flag makes what it wrote durable. A write
// that failed part way answers the bytes written (the rest, sent again,
// reports why), as write(2).
func write(ctx context.Context, st *store.Store, r *proto.Write, limits proto.Limits) (proto.Reply, *[]byte, error) {
	if len(r.Data) > int(limits.IOSizeMax()) {
		return nil, nil, tooBig("write", len(r.Data), limits)
	}
	n, err := st.Write(store.Ino(r.Ino), r.Off, r.Data)
	if n == 0 && err != nil {
		return nil, nil, err
	}
	if r.Flags&(proto.WriteDsync|proto.WriteSync) != 0 {
		if err := st.Fsync(ctx, store.Ino(r.Ino), r.Flags&proto.WriteSync == 0); err != nil {
			return nil, nil, err
		}
	}
	return &proto.WriteReply{N: uint32(n)}, nil, nil
}

// read reads straight into the response frame's buffer, at the offset the
// data has in the frame.
func read(st *store.Store, r *proto.Read, limits proto.Limits) (proto.Reply, *[]byte, error) {
	if r.Len > limits.IOSizeMax() {
		return nil, nil, tooBig("read", int(r.Len), limits)
	}
	out := proto.GetBuffer(responseHeaderSize + int(r.Len))
	data := (*out)[responseHeaderSize : responseHeaderSize+int(r.Len)]
	n, err := st.Read(store.Ino(r.Ino), r.Off, data)
	if err != nil {
		return nil, out, err
	}
	return &proto.ReadReply{Data: data[:n]}, out, nil
}

// getRetries bounds how often get starts again when the file it resolved
// is replaced (a concurrent put) before it could read it.
const getRetries = 3

// get resolves the path and reads the file's first bytes straight into the
// response frame's buffer, after the header and the Attr.
func get(st *store.Store, r *proto.Get, limits proto.Limits) (proto.Reply, *[]byte, error) {
	for try := 0; ; try++ {
		a, err := st.Resolve(r.Path)
		if err != nil {
			return nil, nil, err
		}
		if a.IsDir() {
			return nil, nil, &fs.PathError{Op: "get", Path: r.Path, Err: syscall.EISDIR}
		}
		n := int(min(a.Size, uint64(limits.IOSizeMax())))
		const at = responseHeaderSize + attrSize
		out := proto.GetBuffer(at + n)
		data := (*out)[at : at+n]
		got, err := st.Read(a.Ino, 0, data)
		if errors.Is(err, fs.ErrNotExist) && try < getRetries {
			proto.PutBuffer(out)
			continue
		}
		if err != nil {
			return nil, out, err
		}
		return &proto.GetReply{Attr: attrOf(a), Data: data[:got]}, out, nil
	}
}

// encodeResponse appends the response to request id: reply with status OK,
// or err's status and text. A reply that does not encode (the store
// returned what the wire cannot carry) is answered EIO and logged.
func encodeResponse(dst []byte, id uint64, op proto.Op, reply proto.Reply, err error, log *slog.Logger) []byte {
	if err == nil {
		b, aerr := proto.AppendResponse(dst, id, op, proto.StatusOK, "", reply)
		if aerr == nil {
			return b
		}
		log.Error("a reply does not encode; answering EIO", "op", op, "err", aerr)
		err = fmt.Errorf("server: %v reply does not encode: %v", op, aerr)
	}
	s := proto.StatusOf(err)
	if s == proto.StatusOK {
		s = proto.StatusIO
	}
	if s == proto.StatusIO {
		log.Warn("request failed with EIO", "op", op, "err", err)
	}
	b, aerr := proto.AppendResponse(dst, id, op, s, err.Error(), nil)
	assert.That(aerr == nil, "server: a failed response does not encode")
	return b
}
