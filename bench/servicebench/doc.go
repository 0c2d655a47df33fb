// Package servicebench is `ustore bench service`: what a request costs
// through the whole service — the client (client/), the protocol (proto/) on
// a Unix socket, and the server (server/) — measured beside two references
// taken in the same run:
//
//	service  the op through client.Client to a real server: by default
//	         `ustore serve` in a process of its own on a device file
//	         (Config.ServerProcess), as users run it; with InProcess or
//	         Memdev a server.Server in this process; or an external
//	         server given by its socket
//	store    the same op called directly on the same store.Store, in
//	         process: what the store itself costs
//	echo     a plain Unix-socket echo server that reads a request of the
//	         op's request-frame size and answers the op's response-frame
//	         size: the floor a socket round trip sets; in a process of its
//	         own beside the server's (Config.EchoProcess, `ustore bench
//	         echo-server`), or in this process
//
// Ops (Config.Ops), in this order: "read" 4 KiB at a random block-aligned
// offset of a file, "stat" of a file, "write" 4 KiB at a random offset
// (last, so that the device's work after the writes does not slow the
// reads). Every client has a file of its own (FileSize bytes, written and
// synced before the first cell), so reads hit the device.
//
// A cell is (system, op, clients, depth): clients connections, each with
// depth requests in flight (depth goroutines each issuing one request at a
// time on the shared connection, which pipelines them). The store system has
// no connections: it runs clients×depth goroutines. The echo client at depth
// 1 writes a request and reads its response on the caller's goroutine (the
// floor: no handoff); at a greater depth a reader goroutine hands responses
// to their callers in order, as client.Client does. Each cell warms up
// (Warmup, untimed), then runs for Duration, and on until at least one op
// has completed: ops/s counts the ops that completed in that window, and
// every one of them is a latency sample (exact percentiles, from the sorted
// samples). After a write cell the store is
// synced, untimed, so that dirty data does not spill into the next cell.
//
// Ratios compares, for each op at depth 1, the service's median round trip
// with the echo's: ServiceOverEcho is the protocol round trip in echo round
// trips, AddedOverEcho what the service adds beyond the store's own time
// ((service − store) / echo; the goal is at most 2).
//
// The store reference needs the store in this process, so it runs only
// with the server in this process. Between two processes a request pays
// thread wake-ups that one process hides (process.go), which is why the
// server and the echo run as processes by default.
//
// Files, by concept: config.go (the configuration and its checks), run.go
// (the setup: device, store, server, files; the cells), process.go (the
// server and echo processes), echo.go (the echo server and client),
// report.go (results, ratios, the table).
package servicebench
