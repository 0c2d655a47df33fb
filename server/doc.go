// Package server is ustore's Unix-socket service: it listens on a socket,
// checks each peer's credentials against an allow-list, speaks the protocol
// of package proto (docs/PROTOCOL.md) on every connection, and dispatches
// each request to the store. A connection pipelines: up to the negotiated
// in-flight bound of requests run concurrently, their responses go back in
// whatever order they finish, and when the bound is reached the server stops
// reading that socket until a response has gone out (backpressure: the
// client's writes block in the kernel; nothing queues in the server). The
// same holds across connections for memory: a server-wide budget of bytes
// in flight (Options.InflightBytesMax) that every request's buffers are
// charged to before they exist.
//
// Files, by concept: server.go (the listener's life: New, Serve, Shutdown),
// listen.go (the socket file: stale sockets, mode, group), socket_path.go
// (whether a path could be listened on, checked before anything is
// created), peer_cred.go (SO_PEERCRED, SO_PEERGROUPS, the allow-list),
// admit.go (who gets a connection slot: per-uid limit, slots reserved for
// admins), conn.go (a connection and its handshake), conn_read.go (the
// reader: deadlines, the budget), conn_inline.go (the requests the reader
// serves itself), conn_write.go (the writer), conn_handles.go (the
// connection's open-file handles), budget.go
// (bytes in flight), mem_release.go (memory handed back after a burst),
// log_limit.go (rate-limited peer logs), dispatch.go (a request → a store
// call → a reply), xattr.go (the xattr ops' sizes and ERANGE), limits.go (every bound and why), errors.go. Frame
// buffers are proto's (proto/buffers.go). One server per device is the
// device lock's (dev/devopen/lock.go), taken by `ustore serve`.
//
// # A connection
//
//	              ┌──────────── slots (cap = in-flight max) ────────────┐
//	socket ──► reader ──(take a slot)──► worker ──► store ──► out ──► writer ──► socket
//	            │ one frame at a time      one per request       (cap = in-flight max + 1)
//	            │ (waits for a slot:       ≤ in-flight max        │
//	            │  stops reading)                                 └─(frame written: give the slot back)
//	            │
//	            └─ stat, lookup, statfs, a buffered write of whole blocks, a read
//	               the store has in memory (store.ReadCached): served on the
//	               reader, its response written from there (under the writer's
//	               mutex), its slot given back then (conn_inline.go)
//
// The reader takes a slot before it reads a frame, so a connection never
// holds more than in-flight max requests and in-flight max worker
// goroutines; and it takes the frame's bytes from the server's budget
// before it reads the frame, so the request and response buffers of all
// connections together stay within InflightBytesMax (conn_read.go,
// budget.go). The writer gives a slot back once the response's bytes are
// written, so that the slot covers the response's memory too. Because every
// sender to out holds a slot (or is the reader sending the last,
// connection-level frame after every worker has ended), out never fills and
// no sender ever blocks on it. A request the reader serves inline holds its
// slot and charge as a worker's does, and gives them back once it wrote the
// response; meanwhile the reader reads nothing, so the bounds hold as
// before and the connection's requests wait as they would for a slot.
//
// The server never answers a request StatusBusy: a request past the bound
// is not even read until a slot is free. (EBUSY is a hello reply's: a uid
// over its connection limit, admit.go.)
//
// # Memory
//
// Outside the store's own budgets (cache, dirty data), the server's memory
// is bounded by
//
//	InflightBytesMax                       request and response buffers (default 256 MiB)
//	+ connections × ~136 KiB               bufio reader and writer, a last frame
//	+ requests on workers × a goroutine    (≤ InflightBytesMax / 8 KiB of them;
//	                                         inline requests use the reader's)
//
// The 1 MiB response to a read takes its share before it is allocated;
// buffers go back to size-class pools (proto/buffers.go) that the garbage
// collector empties, so the memory returns once the load ends.
// TestServer_Budget_ReadFlood runs issue 14's attack (20 connections
// pipelining 1 MiB reads, never reading) against a 16 MiB budget and checks
// the live heap.
//
// # Deadlines
//
// A connection with nothing in flight and no handle held (open files) that
// sends nothing for IdleTimeout is closed; a frame that started must
// arrive whole within FrameTimeout; every write of responses has WriteTimeout, so a client that does not read is
// closed and can hold neither the budget nor a graceful shutdown. Each ends
// the connection with a connection-level ETIMEDOUT (the write timeout
// silently: the client is not reading). A client counts a request in flight until its
// response has arrived, and the server gives the slot back only once that
// response is written, so a client within the bound never waits on it.
//
// # Shutdown
//
// Shutdown (or the cancellation of Serve's context) closes the listener and
// removes the socket file, then tells every connection to stop reading: the
// reader's blocked read is cut with a deadline (a partly read frame is
// dropped — it was never acknowledged). The requests already read run to
// the end and their responses are written; then the connection gets a
// connection-level StatusShutdown frame and is closed. Serve and Shutdown
// return when every connection's goroutines have ended, so the caller can
// close the store, whose Close writes back and commits: every request that
// was answered OK is then durable. If Shutdown's context expires first, the
// requests' contexts are cancelled and the sockets closed, and Shutdown
// still waits for the store calls under way to return.
//
// # Invariants
//
//  1. A connection has at most its in-flight max requests read and not yet
//     answered, so at most that many worker goroutines; the server has at
//     most ConnMax connections, other users than AdminUIDs at most ConnMax −
//     ConnReserved, one such uid at most 2 × ConnPerUIDMax (counting those
//     being refused). (conn.slots, Server.connSem, Server.admit;
//     TestServer_Backpressure_StopsReading, TestServer_ConnPerUID_Limit,
//     TestServer_ConnReserved_AdminGetsIn)
//  2. The request and response buffers of all connections together never
//     exceed InflightBytesMax: each is charged to the budget before it is
//     taken, at its size class, and a response never grows past its charge.
//     No one waits for the budget while holding any of it, and one charge is
//     at most a full frame and a small buffer, half the least budget: no
//     deadlock. (budget.takeLocked and conn.respond assert it;
//     TestServer_Budget_ReadFlood, TestBudget_Acquire_FIFO)
//  3. A frame's size is checked against the negotiated limit before any
//     buffer is chosen for it; a refused size allocates nothing.
//     (proto.ReadFrame; proto.FrameBuffer; TestServer_AbsurdLength_AllocatesNothing)
//  4. Every request read gets exactly one response, unless the connection
//     ends first; a request id is in flight from the read of its frame until
//     its response is about to be written, and a reused id is a protocol
//     error. (conn.track; the assertion in conn.writeLoop)
//  5. A connection's goroutines all end when it ends, whatever the peer does:
//     the reader ends on EOF, error or shutdown; workers end when their store
//     call returns; the writer ends when out is closed, after every worker.
//     (TestServer_DisconnectMidRequest_NoLeak)
//  6. Serve and Shutdown return only after every request goroutine has
//     returned: the caller may close the store then. (Server.connWG)
//  7. The socket file is removed only if it is the one this server created
//     (same device and inode); a file that is not a socket is never removed.
//     (removeSocket, listenUnix)
//  8. A handle (proto's open) belongs to its connection: it holds one
//     store.Open hold until its release, or until the connection ends —
//     however it ends, every handle left is released once no request of
//     the connection runs; a connection holds at most HandlesPerConnMax
//     (EMFILE past it), and one holding any is never closed as idle.
//     (handleTable; TestServer_Handles_*)
//  9. The reader never waits for the device on behalf of a read: a read
//     runs on it only if store.ReadCached answered it from memory, which
//     takes no lock a holder keeps across I/O and reads no block from the
//     device; any other read goes to a worker untouched (ReadCached
//     declining changes nothing a Read depends on), and an inline read is
//     at most inlineReadMax bytes. (conn.readCached;
//     TestServer_Inline_CachedRead, TestStore_ReadCached_MemoryOnly)
//  10. A create or an unlink runs on the reader only if
//     store.CreateNoWait or UnlinkNoWait made it, which decline
//     (ErrWouldWait) before their first change wherever Create and Unlink
//     would wait for a lock, an inode load, a commit or space; a declined
//     one goes to a worker untouched, and one made answers as the
//     worker's would. (conn.namespaceNoWait; TestServer_Inline_*,
//     TestStore_NoWait_DeclinesWithoutSideEffects)
package server
