package server

import (
	"context"
	"encoding/binary"
	"errors"

	"ustore/proto"
	"ustore/store"
)

// Requests that run inline: on the connection's reader goroutine, with the
// response written from there, instead of on a worker goroutine whose
// response the writer goroutine writes.
//
// Between two processes each hand-off from one goroutine to another may
// wake a sleeping thread, which on a VM costs several µs; a request that
// crossed reader → worker → writer cost the server 2.5 context switches
// (perf stat, `ustore bench service --op stat --clients 1 --depth 1`
// against `ustore serve`, docs/BENCHMARKS.md "The request path inline").
// A request the store answers from memory gains nothing from a goroutine
// of its own: the reader serves it and writes its response, and the
// request costs the read and the write system calls only.
//
// What runs inline is what does not wait for the device in the common
// case (the store's code for each):
//   - stat: the inode from the inode table, under its mutex; a miss reads
//     the inode item through the node cache;
//   - lookup: the directory's name index, then a stat, through the node
//     cache;
//   - statfs: counters in memory;
//   - write without a sync flag whose offset and length are whole blocks:
//     the data is copied into dirty pages; no block is read first (a
//     partial block of an existing file would be read from the device),
//     and the reservation waits only while dirty data is over its budget,
//     for the background writeback, never for this connection;
//   - a read of at most inlineReadMax bytes whose blocks are all in
//     memory (buffered pages, the page cache), of an inode in memory
//     whose lock is free: store.ReadCached only tries its locks and never
//     touches the device, so it never waits; when it declines, the read
//     goes to a worker, as every read did before, and the worker's Read
//     is the one that reads the device and starts any read-ahead;
//   - a create or a mkdir, the unlink of an empty regular file and the
//     rmdir of a directory, that the store can make without waiting:
//     store.CreateNoWait, MkdirNoWait, UnlinkNoWait and RmdirNoWait
//     decline (store.ErrWouldWait, nothing changed) where the waiting
//     calls would wait — an inode not in memory, a lock held, space
//     short (a commit to unpin first), the running transaction frozen for
//     its commit with another handle open — and the request then goes to
//     a worker; a create is a transaction handle and four tree items in
//     memory, as a stat is a lookup, and gains nothing from a goroutine
//     of its own;
//   - a rename of a file or symlink to a name that does not exist, which
//     the store can make without waiting (store.RenameNoWait): the same
//     rules, and it declines a rename over an existing name (that may
//     write the source's data back first) and one of a directory.
//
// A node-cache miss (a cold inode, a large directory) or a write over the
// dirty budget therefore holds this connection's reader for the device
// read or the writeback: the connection's pipelined requests wait behind
// it, as they would for a full set of slots, while other connections go
// on. Reads that need the device, readdir, the namespace changes the
// store declines and everything else that may write or sync keep a
// worker: a read that misses the page cache would otherwise serialise a
// connection's reads on one device round trip each.

// runsInline reports whether req runs on the reader (see above), whatever
// the store holds; a read may too, if it is cached (readCached).
func runsInline(req proto.Request) bool {
	switch r := req.(type) {
	case *proto.Stat, *proto.Lookup, *proto.StatFS:
		return true
	case *proto.Write:
		return r.Flags&(proto.WriteDsync|proto.WriteSync) == 0 &&
			r.Off%inlineWriteAlign == 0 && len(r.Data)%inlineWriteAlign == 0
	}
	return false
}

// inlineWriteAlign is the store's block size: a write of whole blocks
// reads nothing from the device.
const inlineWriteAlign = store.BlockSize

// runInline serves req on the reader and writes its response: the reader
// holds the request's slot and charge, and gives both back once the
// response is written. The response is flushed unless another whole frame
// is already buffered: then the next response goes out with it, and the
// reader flushes before it waits for more (flushBeforeWait).
func (c *conn) runInline(ctx context.Context, rt requestTrace, id uint64, req proto.Request, reqBuf *[]byte, limits proto.Limits, charge int64) {
	reply, out, err := c.serveRequest(ctx, rt, req, limits, nil)
	proto.PutBuffer(reqBuf)
	c.answer(c.encode(id, req.Op(), out, reply, err, charge))
}

// servedReply is the outcome of a request the reader made before
// serveRequest: a read answered from memory, and the buffer its data is
// in; a namespace change made without waiting, and its error.
type servedReply struct {
	reply proto.Reply
	out   *[]byte
	err   error
}

// namespaceNoWait serves a create, a mkdir, an unlink, an rmdir or a
// rename on the reader if the store can make it without waiting
// (store.CreateNoWait, MkdirNoWait, UnlinkNoWait, RmdirNoWait,
// RenameNoWait), and reports whether it did. If not, nothing was done: the
// request goes to a worker, whose waiting call waits where the reader must
// not. With a test's filter set, which may refuse a request before the
// store sees it, every one of them goes to a worker.
func (c *conn) namespaceNoWait(ctx context.Context, rt requestTrace, id uint64, req proto.Request, reqBuf *[]byte, limits proto.Limits, charge int64) bool {
	if c.s.testFilter.Load() != nil {
		return false
	}
	var served servedReply
	// The store's work runs here, before serveRequest: bind the span
	// for it, so that its tree-lock waits name the request (eBPF).
	binding := rt.bind()
	st := c.s.st
	var err error
	switch r := req.(type) {
	case *proto.Create:
		var a store.Attr
		a, err = st.CreateNoWait(store.Ino(r.Dir), r.Name, r.Perm)
		served.reply, _, served.err = attrReply(a, err)
	case *proto.Mkdir:
		var a store.Attr
		a, err = st.MkdirNoWait(store.Ino(r.Dir), r.Name, r.Perm)
		served.reply, _, served.err = attrReply(a, err)
	case *proto.Unlink:
		err = st.UnlinkNoWait(store.Ino(r.Dir), r.Name)
		served.reply, _, served.err = emptyOr(err)
	case *proto.Rmdir:
		err = st.RmdirNoWait(store.Ino(r.Dir), r.Name)
		served.reply, _, served.err = emptyOr(err)
	case *proto.Rename:
		err = st.RenameNoWait(store.Ino(r.SrcDir), r.SrcName, store.Ino(r.DstDir), r.DstName, 0)
		served.reply, _, served.err = emptyOr(err)
	case *proto.Rename2:
		err = st.RenameNoWait(store.Ino(r.SrcDir), r.SrcName, store.Ino(r.DstDir), r.DstName, r.Flags)
		served.reply, _, served.err = emptyOr(err)
	default:
		err = store.ErrWouldWait
	}
	binding.Unbind()
	if errors.Is(err, store.ErrWouldWait) {
		return false
	}
	reply, out, err := c.serveRequest(ctx, rt, req, limits, &served)
	proto.PutBuffer(reqBuf)
	c.answer(c.encode(id, req.Op(), out, reply, err, charge))
	return true
}

// readCached serves r on the reader if the store can answer it from
// memory without waiting (store.ReadCached), and reports whether it did.
// If not, nothing was done: the read goes to a worker, as every read did
// before. The data is read straight into the response's buffer, as a
// worker's read is (dispatch.go, read); the reader's charge already
// covers it (replySizeMax).
func (c *conn) readCached(ctx context.Context, rt requestTrace, id uint64, r *proto.Read, limits proto.Limits, charge int64) bool {
	if r.Len > limits.IOSizeMax() || r.Len > inlineReadMax {
		return false
	}
	out := proto.GetBuffer(responseHeaderSize + int(r.Len))
	data := (*out)[responseHeaderSize : responseHeaderSize+int(r.Len)]
	n, ok := c.s.st.ReadCached(store.Ino(r.Ino), r.Off, data)
	if !ok {
		proto.PutBuffer(out)
		return false
	}
	served := servedReply{reply: &proto.ReadReply{Data: data[:n]}, out: out}
	reply, out, err := c.serveRequest(ctx, rt, r, limits, &served)
	c.answer(c.encode(id, r.Op(), out, reply, err, charge))
	return true
}

// answer writes a response the reader made (an inline request's, or its
// ENOSYS and EINVAL answers) and gives back its slot and charge.
func (c *conn) answer(r response) {
	flush := !c.frameBuffered()
	c.wmu.Lock()
	c.writeLocked(r, flush)
	c.wmu.Unlock()
	c.unflushed = !flush
	c.release(r)
}

// flushBeforeWait flushes an inline response left in the writer's buffer
// when the reader is about to wait (for a slot, for the next frame, for
// the budget): nothing else would send it until the writer next writes.
func (c *conn) flushBeforeWait() {
	if !c.unflushed || c.frameBuffered() {
		return
	}
	c.unflushed = false
	c.wmu.Lock()
	c.flushLocked()
	c.wmu.Unlock()
}

// frameBuffered reports whether the read buffer holds a whole frame: the
// next request can be read without waiting.
func (c *conn) frameBuffered() bool {
	n := c.br.Buffered()
	if n < 4 {
		return false
	}
	h, err := c.br.Peek(4)
	return err == nil && uint32(n) >= binary.LittleEndian.Uint32(h)
}
