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
// Files, by concept: client.go (dial, sending a call), read_role.go
// (awaiting a call: who reads the responses), ops.go (one method per op), xattr.go (the xattr calls and their
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
// With no call in flight nobody reads the connection (read_role.go), so
// the close is seen by the next call — its write finds the socket closed,
// it reads the server's reason, and its frame, which reached no one, goes
// on the new connection — or by Err, which looks without waiting for
// anything to arrive.
// Any other end of a connection — the server's shutdown (ESHUTDOWN), a
// malformed frame, Close — is final.
//
// # Pipelining
//
//	caller ─► send: take a slot, encode, write the frame (one writer at a time)
//	             │ pending[id] = call
//	caller ─► await: nobody reads? take the read role: read responses, hand
//	             each to its call (or drop it if its caller gave up), give its
//	             slot back — until this call's own has come; then hand the
//	             role to a caller waiting, or to a background reader while
//	             calls nobody waits for are in flight, or to no one
//
// At depth 1 a call is a write and a read on its caller's goroutine: no
// reader goroutine wakes for the response and wakes the caller in turn
// (read_role.go says what that hand-off cost between two processes).
//
// A slot is a token of the server's in-flight bound: the client never has
// more requests in flight than the server announced (the server would
// stop reading past it), and a call past the bound waits for a slot (under
// its context); the calls holding the slots are being read (invariant 6),
// so the slots come back.
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
//     which case the response's buffer goes back to the pool. (readOne,
//     fail)
//  4. A malformed response, or one for an id not in flight, ends the
//     connection: every call in flight fails. (readOne)
//  5. Only a connection-level ETIMEDOUT leads to a new connection, made
//     by the first call after it and used by every call after that; a
//     call is sent on one connection only and never resent — except the
//     one whose write found the connection already closed by the server's
//     idle close: its frame reached no one, and it goes once on the new
//     connection. (Client.send, Client.conn; TestClient_IdleClose_Redials,
//     TestClient_ShutdownClose_Final, TestReadRole_IdleClose_NextCallRedials)
//  6. At most one goroutine reads the socket: the holder of the read role
//     (conn.reading), which passes only under mu. While calls are in
//     flight someone holds it or is about to take it: the caller of do,
//     which awaits at once; otherwise the background reader, started by a
//     send for a later await, by a sender waiting for a slot, and by leave
//     when nobody waits. A response is never left unread for long: the
//     server would stop writing to the connection and, past its write
//     timeout, close it. A reader's
//     wait for a frame may be cut (its caller's context); a frame once
//     begun is read whole. (read_role.go; TestReadRole_*)
package client
