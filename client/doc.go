// Package client is the Go client of ustore: one pipelined connection to a
// server's Unix socket (docs/PROTOCOL.md), safe for concurrent use by many
// goroutines. Every call takes a context: its deadline and cancellation end
// the wait (a cancelled call returns ctx.Err(); its response, when it comes,
// is discarded), and its trace context, when Options.Traceparent gives one,
// travels with the request so that the server's span continues the trace.
// A failed request returns a *proto.StatusError, which unwraps to its errno:
// errors.Is(err, fs.ErrNotExist) and errors.Is(err, syscall.ENOENT) hold for
// a remote ENOENT.
//
// The methods mirror the store's operations by inode (Lookup, Create, ...,
// Write, Read, Fsync, Sync; Open and Release, whose handles belong to the
// connection) and by path (Resolve, Put, Get). Data larger
// than one request's limit (Limits().IOSizeMax(), 1 MiB) moves in chunks
// with several requests in flight: Write, Read, Put and Get do it for a
// byte slice, OpenReader and OpenWriter for a stream.
//
// Files, by concept: client.go (dial, the call machinery, the response
// reader), ops.go (one method per op), xattr.go (the xattr calls and their
// size rules), stream.go (chunked transfers:
// Write, Read, Put, Get), reader.go and writer.go (Reader and Writer,
// streams of a file), write_behind.go (WriteBehind: a file's writes sent
// without waiting for each reply, their errors reported by its next call
// or its fsync; docs/PROTOCOL.md, "Write-behind"), errors.go. Frame buffers are proto's
// (proto/buffers.go), shared with the server.
//
// # Reconnecting
//
// The server closes a connection that stays idle past its --idle-timeout
// (5 min by default) with a connection-level ETIMEDOUT, and runs no request
// it had not read by then. The next call dials again, once however many
// calls arrive together (Client.conn, under dialMu), so a long-lived
// Client survives idle periods. Calls already in flight on the closed
// connection fail with the ETIMEDOUT (they were not run: safe to retry).
// Any other end of a connection — the server's shutdown (ESHUTDOWN), a
// malformed frame, Close — is final.
//
// # Pipelining
//
//	caller ─► send: take a slot, encode, write the frame (one writer at a time)
//	             │ pending[id] = call
//	reader ◄─────┘ one goroutine reads responses, decodes each, hands it to
//	               its call (or drops it if the caller gave up), gives the slot back
//
// A slot is a token of the server's in-flight bound: the client never has
// more requests in flight than the server announced (the server would
// stop reading past it), and a call past the bound waits for a slot (under
// its context).
//
// # Invariants
//
//  1. At most Limits().InflightMax requests are in flight; a request id is in
//     flight from its frame's write until its response is read, even when
//     its caller has given up. (slots, pending)
//  2. A request frame is written whole, by one goroutine at a time: frames
//     never interleave. (wmu)
//  3. Every call registered in pending gets exactly one result — its
//     response or the connection's error — unless its caller gave up, in
//     which case the response's buffer goes back to the pool. (readLoop,
//     fail)
//  4. A malformed response, or one for an id not in flight, ends the
//     connection: every call in flight fails. (readLoop)
//  5. Only a connection-level ETIMEDOUT leads to a new connection, made
//     by the first call after it and used by every call after that; a
//     call is sent on one connection only and never resent.
//     (Client.conn; TestClient_IdleClose_Redials,
//     TestClient_ShutdownClose_Final)
package client
