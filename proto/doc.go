// Package proto is ustore's wire format: the handshake, the frames that
// carry requests and responses over the Unix socket, the op and status
// codes, the limits, and an encoder and a decoder for every request and
// reply payload. It does no I/O policy — no sockets, no goroutines, no
// timeouts: ReadFrame reads one frame from a bufio.Reader, the Append
// functions append to a byte slice (allocation-free when it has room).
// The server and the client decide everything else. docs/PROTOCOL.md is the
// specification; this package is its source of truth.
//
// Files, by concept: limits.go (every bound and why), handshake.go,
// frame.go (frames drawn in ASCII), traceparent.go, ops.go, status.go,
// errors.go, codec.go (the primitive encodings), request.go and
// request_{namespace,attr,io,handle,symlink,xattr}.go (request payloads; open's
// reply is in request_handle.go too), reply.go, attr.go and
// replies.go (reply payloads), buffers.go (pooled frame buffers for the
// server and the client, sized before a frame is read).
//
// # A connection
//
//	client                                   server
//	  Hello{min, max}            ──────►
//	                             ◄──────     HelloReply{OK, version, limits}
//	  request id 1 (lookup)      ──────►                   (or a failed status, close)
//	  request id 2 (write)       ──────►
//	                             ◄──────     response id 2
//	  request id 3 (read)        ──────►
//	                             ◄──────     response id 1
//	                             ◄──────     response id 3
//
// Pipelining: a client may have up to the announced Limits.InflightMax
// requests in flight (sent, response not yet received). Responses come in
// any order; the request id, chosen by the client and unique among its
// requests in flight, matches them. Requests in flight together may run
// concurrently, in any order: a request sees the effects of every request
// whose response had arrived before it was sent, and nothing is promised
// about the others — so a client sends fsync after its writes' responses,
// not beside them. A server does not read past the in-flight limit (nor
// past its own memory budget): the client's writes block until responses
// have gone out (backpressure), so a client must read while it writes.
// StatusBusy is only a hello reply's (too many connections of the peer's
// uid).
//
// Errors: a malformed frame or payload (ErrMalformed) ends the connection:
// the server answers StatusBadMessage — for the frame's request id, or id 0
// when it could not read one — and closes. An unknown op (ErrUnknownOp) is
// answered StatusNoSys, and data or a read length over IOSizeMax
// (ErrOverLimit) StatusInvalid, and the connection goes on: the frame's size
// kept the stream in step. A traceparent that does not parse is ignored
// (W3C Trace Context), never an error. A failed operation is a response with its status, a
// message and no payload.
//
// # Streaming
//
// There are no stream ops. A file larger than one request's data
// (Limits.IOSizeMax, at most 1 MiB) moves as pipelined reads or writes of
// chunks by inode: get returns the attributes and the first chunk, and the
// client reads the rest with up to InflightMax reads in flight; a large put
// is create of a temporary name, pipelined writes, fsync, rename over the
// name (the store's own Put, done by the client). Why: a stream op would
// need per-connection stream state in the server (a table, its bound, its
// cleanup on disconnect and on error), and a flow control of its own; with
// chunked requests the in-flight limit already bounds a connection's
// memory (InflightMax frames), the pipeline gives a stream's throughput, a
// failed chunk is an ordinary failed request, and a large transfer never
// holds the connection for more than one frame, so small requests
// interleave with it.
//
// # Versioning
//
// The handshake's layout never changes. Everything after it belongs to the
// negotiated version: a new op, status, flag, field or limit is a new
// version; a version is never changed once released (one exception, ops
// 19–28 with statuses 24–29, which an older peer meets only as ENOSYS:
// docs/PROTOCOL.md, "Versioning"). The client offers a
// range, the server picks the highest version in both ranges or refuses
// with StatusVersion. Within a version, decoders are strict: what they
// accept is exactly what the encoders produce.
//
// # Invariants
//
//  1. No length read from the wire is used to allocate or slice before it
//     is checked against its limit and against the bytes that remain: a
//     frame's size against the negotiated frame size before its buffer is
//     made, string and path lengths and entry counts against their limits
//     and the payload. (ReadFrame's checkHeader; decoder.take, path, str;
//     ReadDirReply.decode; TestReadFrame_HugeSizeAllocatesNothing)
//  2. Encoding is canonical: every value has one encoding, and a decoder
//     accepts only that one (booleans 0 or 1, no unknown flags or bits but
//     fallocate's mode and rename2's flags, arguments the store judges;
//     zero unset setattr fields, no trailing bytes). So decode∘encode and
//     encode∘decode are identities — but for a traceparent that does not
//     parse, which is dropped (ignored, as W3C asks), so that the frame
//     re-encodes without it. (Validate in every decode; FuzzReadFrame,
//     FuzzDecodeRequest, FuzzDecodeReply)
//  3. What an encoder writes, its peer's decoder accepts: AppendRequest and
//     AppendResponse validate first, and no valid payload exceeds
//     FrameSizeMax. (Validate; endFrame; the limits' compile-time checks)
//  4. A response with status OK carries a payload of its op's reply type
//     and no message; any other status carries no payload. Request id 0 is
//     never a request's: it marks a connection-level error. (AppendResponse
//     assertions; decodeResponseFrame)
//  5. The limits are related at compile time: every data frame fits
//     FrameSizeMax, every other payload fits FrameSizeMin, every length
//     fits its length field. (limits.go)
package proto
