// Package jaegertest runs a real Jaeger (v2, all in one process, in-memory
// storage) for a test, and reads back through its query API what the code
// under test exported: traces as span trees with their attributes.
//
//	test ──OTLP/HTTP──► Jaeger ──► memory ◄──GET /api/v3/traces── test
//	       OTLPEndpoint()                     Traces, WaitTrace
//
// The binary is bin/jaeger at the repository root, built from the version
// tools/go.mod pins by `make jaeger`. When it is missing or older than
// tools/go.mod and tools/go.sum, Start builds it the same way, so that CI
// runs the Jaeger tests instead of skipping them — but a cold build takes
// minutes (5–6 on an idle 2-vCPU machine, 18 on a loaded one; 2.3 GB of
// memory), competes with every other test for the CPUs, and must fit in the
// test binary's -timeout (10 minutes by default): run `make jaeger` first.
//
// Jaeger is started with a configuration of its own (not the built-in
// all-in-one one, whose UI and query ports listen on every interface and
// whose other receivers take a dozen fixed ports): only an OTLP receiver
// (gRPC and HTTP), the query extension and a health check, each on a free
// port of 127.0.0.1, no metrics, and self-tracing off — with self-tracing
// on, Jaeger spends 10 s at SIGTERM exporting to its own closed port.
//
// # Invariants
//
//  1. Every port Jaeger listens on is on 127.0.0.1 and was free when picked
//     (TestStart_Listens_LoopbackOnly).
//  2. Start returns only once the health check and the query API answer;
//     t.Cleanup stops the process (SIGTERM, then SIGKILL after
//     stopTimeout), and a test binary that dies takes Jaeger with it
//     (Pdeathsig).
//  3. A Trace's spans form a tree: every span but the root has its parent
//     in the trace, or is listed in Orphans (TestParseTraces_Tree).
//  4. The package imports no ustore package: it tests any of them.
package jaegertest
