package trace

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// instrumentationName names ustore's tracer and meter (the scope).
const instrumentationName = "ustore"

// tracerBox holds the tracer Start uses, so that it fits an atomic.Pointer,
// and the sampling decision Start makes before the tracer when the
// provider came from NewTracerProvider (nil: the provider decides alone).
type tracerBox struct {
	t oteltrace.Tracer
	d *decider
}

// tracer is nil while tracing is off: Start then costs one atomic load.
var tracer atomic.Pointer[tracerBox]

// UseTracerProvider makes Start create spans with tp (nil: tracing off) and
// returns a function that puts back what was there, unless something else
// has been installed since. Setup calls it; tests of other packages call it
// with an SDK provider and a tracetest.SpanRecorder to assert span shapes.
func UseTracerProvider(tp oteltrace.TracerProvider) (restore func()) {
	return useTracer(tp, nil)
}

func useTracer(tp oteltrace.TracerProvider, d *decider) (restore func()) {
	var box *tracerBox
	if tp != nil {
		box = &tracerBox{t: tp.Tracer(instrumentationName), d: d}
	}
	old := tracer.Swap(box)
	return func() { tracer.CompareAndSwap(box, old) }
}

// Enabled reports whether Start creates real spans. With tracing off, Start
// costs a few ns, but building its attribute arguments still costs ~10 ns
// each (OpenTelemetry's KeyValue is a 64-byte struct the caller fills and
// copies; no allocation): a hot path with several attributes may test
// Enabled first.
func Enabled() bool { return tracer.Load() != nil }

// Span is a span started by Start, or the zero Span when tracing is off;
// every method of the zero Span does nothing. It is a small value: pass it
// by value.
type Span struct{ s oteltrace.Span }

// Start starts a span named name (docs/TRACING.md's names: "ustore.<op>",
// "journal.commit", "logtree.sync_log", ...) as a child of ctx's span, and
// returns a context carrying it. End it with Span.End. When tracing is off it
// returns ctx itself and the zero Span, without allocating
// (BenchmarkStart_Off). When the sampler drops the span, it returns the zero
// Span too, and a context that carries the decision to the spans started
// under it (see decider).
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, Span) {
	box := tracer.Load()
	if box == nil {
		return ctx, Span{}
	}
	return box.start(ctx, name, attrs)
}

// start copies attrs before they reach the OTel interfaces: escape analysis
// cannot see through an interface call, so handing attrs over directly would
// make every caller's variadic array escape to the heap even when tracing is
// off. With the copy, only what the elements point at escapes, and those are
// the callers' constants.
func (b *tracerBox) start(ctx context.Context, name string, attrs []attribute.KeyValue) (context.Context, Span) {
	if b.d != nil {
		var drop bool
		if ctx, drop = b.d.decide(ctx); drop {
			return ctx, Span{}
		}
	}
	if len(attrs) == 0 {
		ctx, s := b.t.Start(ctx, name)
		return ctx, Span{s}
	}
	ctx, s := b.t.Start(ctx, name, oteltrace.WithAttributes(clone(attrs)...))
	return ctx, Span{s}
}

func clone(attrs []attribute.KeyValue) []attribute.KeyValue {
	return append([]attribute.KeyValue(nil), attrs...)
}

// SpanFromContext returns ctx's span, for code that was handed a context and
// wants to annotate the span its caller started; the zero Span when there is
// none or tracing is off.
func SpanFromContext(ctx context.Context) Span {
	if tracer.Load() == nil {
		return Span{}
	}
	s := oteltrace.SpanFromContext(ctx)
	if !s.SpanContext().IsValid() {
		return Span{}
	}
	return Span{s}
}

// End ends the span. Calls after the first do nothing.
func (s Span) End() {
	if s.s != nil {
		s.s.End()
	}
}

// SetAttributes sets attributes on the span, overwriting those of the same key.
func (s Span) SetAttributes(attrs ...attribute.KeyValue) {
	if s.s != nil {
		s.s.SetAttributes(clone(attrs)...)
	}
}

// AddEvent records a named event with attributes at the current time.
func (s Span) AddEvent(name string, attrs ...attribute.KeyValue) {
	if s.s != nil {
		s.s.AddEvent(name, oteltrace.WithAttributes(clone(attrs)...))
	}
}

// RecordError records err as an exception event and marks the span failed.
// A nil err does nothing.
func (s Span) RecordError(err error) {
	if s.s != nil && err != nil {
		s.s.RecordError(err)
		s.s.SetStatus(codes.Error, err.Error())
	}
}

// IsRecording reports whether the span records what it is given; false for
// the zero Span. Guard expensive attribute computations with it.
func (s Span) IsRecording() bool {
	return s.s != nil && s.s.IsRecording()
}

// Key is the span's 64-bit key: its span ID read as a big-endian integer,
// the form LockWaitBegin hands to BPF. 0 for the zero Span.
func (s Span) Key() uint64 {
	if s.s == nil {
		return 0
	}
	id := s.s.SpanContext().SpanID()
	return binary.BigEndian.Uint64(id[:])
}

// TraceID is the span's trace ID in hex (as Jaeger shows it), "" for the
// zero Span.
func (s Span) TraceID() string {
	if s.s == nil {
		return ""
	}
	return s.s.SpanContext().TraceID().String()
}

// Attribute helpers. The keys are ustore's own ("ustore." + noun); numbers
// are int64 attributes, so inode numbers and transids above 2^63 (never
// handed out) would show negative.

// Ino is an inode number (btrfs: objectid of an inode item).
func Ino(ino uint64) attribute.KeyValue { return attribute.Int64("ustore.ino", int64(ino)) }

// Transid is a transaction id.
func Transid(id uint64) attribute.KeyValue { return attribute.Int64("ustore.transid", int64(id)) }

// Bytes is a byte count: a request's payload, a write's length.
func Bytes(n int64) attribute.KeyValue { return attribute.Int64("ustore.bytes", n) }

// Nodes is a count of tree nodes, e.g. the dirty nodes a commit writes.
func Nodes(n int) attribute.KeyValue { return attribute.Int("ustore.nodes", n) }

// BatchSize is the number of operations in a batch: SQEs in a ring
// submission, keys in a batch insert.
func BatchSize(n int) attribute.KeyValue { return attribute.Int("ustore.batch_size", n) }

// LogSyncRole is what an fsync's log context did in the log sync that
// completed it: "committer" (it wrote the sync for the batch), "waiter"
// (it waited for another's), "none" (its log was durable already, or it
// committed instead).
func LogSyncRole(r string) attribute.KeyValue { return attribute.String("ustore.log_sync_role", r) }

// Contexts is the number of log contexts that joined one log sync.
func Contexts(n int) attribute.KeyValue { return attribute.Int("ustore.contexts", n) }

// Op is a request's operation name ("create", "write", "fsync", ...).
func Op(op string) attribute.KeyValue { return attribute.String("ustore.op", op) }

// Dir is the inode number of the directory a request names an entry of.
func Dir(ino uint64) attribute.KeyValue { return attribute.Int64("ustore.dir", int64(ino)) }

// Name is a directory entry's name.
func Name(name string) attribute.KeyValue { return attribute.String("ustore.name", name) }

// NewDir is a rename's target directory.
func NewDir(ino uint64) attribute.KeyValue { return attribute.Int64("ustore.new_dir", int64(ino)) }

// NewName is a rename's target name.
func NewName(name string) attribute.KeyValue { return attribute.String("ustore.new_name", name) }

// Path is a path within the store ("/a/b"), of the ops that take one.
func Path(p string) attribute.KeyValue { return attribute.String("ustore.path", p) }

// Offset is a read's or write's byte offset in its file.
func Offset(off uint64) attribute.KeyValue { return attribute.Int64("ustore.offset", int64(off)) }

// Status is a failed request's status: the errno's name ("ENOENT").
func Status(s string) attribute.KeyValue { return attribute.String("ustore.status", s) }

// Args is a command's arguments, for a client command's root span: one
// string, joined by spaces, as a shell would show them (Jaeger draws a
// string array as JSON).
func Args(args []string) attribute.KeyValue {
	return attribute.String("ustore.args", strings.Join(args, " "))
}

// Phase is a commit phase ("update_roots", "write_nodes", "flush", "super").
func Phase(phase string) attribute.KeyValue { return attribute.String("ustore.phase", phase) }

// W3C trace context (https://www.w3.org/TR/trace-context/), the traceparent
// a client sends with a request:
//
//	00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
//	^^ ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ ^^^^^^^^^^^^^^^^ ^^
//	version       trace-id (16 bytes)    parent-id (8)  flags (01: sampled, 02: random)
//
// All hex is lowercase; an all-zero trace-id or parent-id is invalid;
// version ff is invalid; a later version may append "-..." fields, which a
// version-00 reader ignores.
const traceparentLen = 55

// ContextWithRemoteParent returns ctx carrying the remote span that
// traceparent names, so that the next Start continues the client's trace.
// An empty or malformed traceparent, or tracing off, returns ctx unchanged:
// a bad header from a client must never fail its request.
func ContextWithRemoteParent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" || tracer.Load() == nil {
		return ctx
	}
	sc, ok := parseTraceparent(traceparent)
	if !ok {
		return ctx
	}
	return oteltrace.ContextWithRemoteSpanContext(ctx, sc)
}

// Traceparent returns the W3C traceparent of ctx's span, for a client to send
// with a request, or "" when ctx has no valid span. It works with any
// OpenTelemetry span in ctx, not only those of Start.
func Traceparent(ctx context.Context) string {
	sc := oteltrace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	var b [traceparentLen]byte
	tid, sid := sc.TraceID(), sc.SpanID()
	b[0], b[1], b[2] = '0', '0', '-'
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	hex.Encode(b[53:55], []byte{byte(sc.TraceFlags() & (oteltrace.FlagsSampled | oteltrace.FlagsRandom))})
	return string(b[:])
}

// parseTraceparent parses a traceparent header by the rules drawn above.
func parseTraceparent(h string) (oteltrace.SpanContext, bool) {
	var none oteltrace.SpanContext
	if len(h) < traceparentLen || h[2] != '-' || h[35] != '-' || h[52] != '-' {
		return none, false
	}
	var version, flags [1]byte
	var tid oteltrace.TraceID
	var sid oteltrace.SpanID
	if !decodeLowerHex(version[:], h[0:2]) || version[0] == 0xff ||
		!decodeLowerHex(tid[:], h[3:35]) || !decodeLowerHex(sid[:], h[36:52]) ||
		!decodeLowerHex(flags[:], h[53:55]) {
		return none, false
	}
	if len(h) > traceparentLen && (version[0] == 0 || h[traceparentLen] != '-') {
		return none, false
	}
	sc := oteltrace.NewSpanContext(oteltrace.SpanContextConfig{
		TraceID:    tid,
		SpanID:     sid,
		TraceFlags: oteltrace.TraceFlags(flags[0]) & (oteltrace.FlagsSampled | oteltrace.FlagsRandom),
		Remote:     true,
	})
	return sc, sc.IsValid()
}

// decodeLowerHex decodes s into dst (len(s) == 2*len(dst)), refusing
// uppercase digits as the W3C format does.
func decodeLowerHex(dst []byte, s string) bool {
	for i := range dst {
		hi, ok1 := lowerHexDigit(s[2*i])
		lo, ok2 := lowerHexDigit(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func lowerHexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
