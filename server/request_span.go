package server

import (
	"ustore/proto"
	"ustore/trace"
)

// A request span ("ustore.<op>") names what the request is about, so that
// a trace can be read without the client's side of it: the inode it acts
// on (ustore.ino), the directory entry (ustore.dir, ustore.name; a
// rename's target as ustore.new_dir, ustore.new_name), the path of the
// path-addressed ops (ustore.path), the offset and length of data
// (ustore.offset, ustore.bytes). A reply that carries attributes adds the
// inode it answered (ustore.ino), so that a lookup or a put names the
// inode that later requests use.

// setRequestAttrs sets req's attributes on its span. The caller calls it
// only for a recording span: each attribute costs ~10 ns, and a path or
// name is copied into the span.
func setRequestAttrs(span trace.Span, req proto.Request) {
	switch r := req.(type) {
	case *proto.Lookup:
		span.SetAttributes(trace.Dir(r.Dir), trace.Name(r.Name))
	case *proto.Create:
		span.SetAttributes(trace.Dir(r.Dir), trace.Name(r.Name))
	case *proto.Mkdir:
		span.SetAttributes(trace.Dir(r.Dir), trace.Name(r.Name))
	case *proto.Link:
		span.SetAttributes(trace.Ino(r.Ino), trace.Dir(r.Dir), trace.Name(r.Name))
	case *proto.Unlink:
		span.SetAttributes(trace.Dir(r.Dir), trace.Name(r.Name))
	case *proto.Rmdir:
		span.SetAttributes(trace.Dir(r.Dir), trace.Name(r.Name))
	case *proto.Rename:
		span.SetAttributes(trace.Dir(r.SrcDir), trace.Name(r.SrcName), trace.NewDir(r.DstDir), trace.NewName(r.DstName))
	case *proto.Rename2:
		span.SetAttributes(trace.Dir(r.SrcDir), trace.Name(r.SrcName), trace.NewDir(r.DstDir), trace.NewName(r.DstName))
	case *proto.Fallocate:
		span.SetAttributes(trace.Ino(r.Ino), trace.Offset(r.Off), trace.Bytes(int64(r.Len)))
	case *proto.ReadDir:
		span.SetAttributes(trace.Dir(r.Dir))
	case *proto.Stat:
		span.SetAttributes(trace.Ino(r.Ino))
	case *proto.Open:
		span.SetAttributes(trace.Ino(r.Ino))
	case *proto.SetAttr:
		span.SetAttributes(trace.Ino(r.Ino))
	case *proto.Write:
		span.SetAttributes(trace.Ino(r.Ino), trace.Offset(r.Off), trace.Bytes(int64(len(r.Data))))
	case *proto.Read:
		span.SetAttributes(trace.Ino(r.Ino), trace.Offset(r.Off), trace.Bytes(int64(r.Len)))
	case *proto.Fsync:
		span.SetAttributes(trace.Ino(r.Ino))
	case *proto.Resolve:
		span.SetAttributes(trace.Path(r.Path))
	case *proto.Put:
		span.SetAttributes(trace.Path(r.Path), trace.Bytes(int64(len(r.Data))))
	case *proto.Get:
		span.SetAttributes(trace.Path(r.Path))
	case *proto.Symlink:
		span.SetAttributes(trace.Dir(r.Dir), trace.Name(r.Name), trace.Bytes(int64(len(r.Target))))
	case *proto.Readlink:
		span.SetAttributes(trace.Ino(r.Ino))
	case *proto.GetXattr:
		span.SetAttributes(trace.Ino(r.Ino), trace.Name(r.Name))
	case *proto.SetXattr:
		span.SetAttributes(trace.Ino(r.Ino), trace.Name(r.Name), trace.Bytes(int64(len(r.Value))))
	case *proto.ListXattr:
		span.SetAttributes(trace.Ino(r.Ino))
	case *proto.RemoveXattr:
		span.SetAttributes(trace.Ino(r.Ino), trace.Name(r.Name))
	}
	// StatFS, Sync: about the whole store; Release: about a handle, whose
	// inode its Open's span names.
}

// endRequestSpan records a request's outcome on its span: the inode a
// reply answered, and for a failed request its status (ustore.status, the
// errno's name). Only a failure of the server marks the span failed
// (status Error, an exception event); an answer about the caller's request
// does not, as OpenTelemetry's HTTP conventions leave a server span's
// status unset for a 4xx. A lookup's ENOENT is the normal answer of the
// probe 'mkdir -p' makes for each parent, and an EEXIST, ENOTEMPTY or
// EINVAL says the request did not fit the namespace, not that the server
// failed. Jaeger's "error" filter then shows the server's failures, and
// the status attribute still finds every failed request
// (ustore.status=ENOENT). The client's own span is the place to mark a
// command that failed because of such an answer.
func endRequestSpan(span trace.Span, reply proto.Reply, err error) {
	if !span.IsRecording() {
		return
	}
	if err == nil {
		if a, ok := reply.(*proto.Attr); ok {
			span.SetAttributes(trace.Ino(a.Ino))
		} else if g, ok := reply.(*proto.GetReply); ok {
			span.SetAttributes(trace.Ino(g.Attr.Ino))
		}
		return
	}
	s := proto.StatusOf(err)
	span.SetAttributes(trace.Status(s.String()))
	if isAnswer(s) {
		return
	}
	span.RecordError(err)
}

// isAnswer reports whether a request that failed with s got an answer
// about itself (the name is missing, exists, is not a directory, ...)
// rather than met a failure of the server (EIO, ENOSPC, EROFS, a
// timeout, a cancelled or malformed request, a shutdown, a full hash
// chain): the table of endRequestSpan.
func isAnswer(s proto.Status) bool {
	switch s {
	case proto.StatusNotExist, proto.StatusExist, proto.StatusNotDir, proto.StatusIsDir,
		proto.StatusNotEmpty, proto.StatusNameTooLong, proto.StatusInvalid, proto.StatusFileTooBig,
		proto.StatusPerm, proto.StatusTooManyLinks, proto.StatusLoop, proto.StatusAccess:
		return true
	}
	return false
}
