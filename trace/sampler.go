package trace

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// Sampling decides which traces are recorded and exported. The names are
// OTEL_TRACES_SAMPLER's (the OpenTelemetry specification's): a
// "parentbased_" sampler follows the parent's decision when a span has a
// parent (a request's traceparent, or the span that started it) and uses
// its root sampler only for a new trace; "traceidratio" keeps a new trace
// when its trace ID falls within Ratio of the ID space, so that every
// process deciding on the same trace ID decides the same.
//
// The default, DefaultSampling, is parentbased_traceidratio at 1 %: a
// client that traces (the CLI, whose command span is sampled, or a Go
// client under its own sampled span) always gets the server's spans of its
// requests, a client that sends an unsampled traceparent gets none, and
// the requests of clients that send no traceparent — bulk traffic nobody
// asked to trace — are sampled 1 in 100: enough to see their latencies in
// Jaeger, at a cost within 5 % of untraced throughput (docs/BENCHMARKS.md,
// "Tracing cost"), where keeping every request costs more than half of it
// and floods the collector with spans nobody reads.
type Sampling struct {
	// Name is the sampler: one of SamplerNames.
	Name string
	// Ratio is the fraction of new traces the traceidratio samplers keep,
	// in [0, 1]; unused by the others.
	Ratio float64
	// Source says what chose it: "--trace-sample-ratio" (Config.SampleRatio),
	// "OTEL_TRACES_SAMPLER", or "default".
	Source string
}

// The samplers OTEL_TRACES_SAMPLER may name.
const (
	SamplerAlwaysOn                = "always_on"
	SamplerAlwaysOff               = "always_off"
	SamplerTraceIDRatio            = "traceidratio"
	SamplerParentBasedAlwaysOn     = "parentbased_always_on"
	SamplerParentBasedAlwaysOff    = "parentbased_always_off"
	SamplerParentBasedTraceIDRatio = "parentbased_traceidratio"
)

// SamplerNames lists the samplers, for messages.
var SamplerNames = []string{SamplerAlwaysOn, SamplerAlwaysOff, SamplerTraceIDRatio,
	SamplerParentBasedAlwaysOn, SamplerParentBasedAlwaysOff, SamplerParentBasedTraceIDRatio}

// DefaultSampleRatio is the ratio of DefaultSampling (see Sampling for why).
const DefaultSampleRatio = 0.01

// DefaultSampling is the sampler when neither Config nor the environment
// names one.
var DefaultSampling = Sampling{Name: SamplerParentBasedTraceIDRatio, Ratio: DefaultSampleRatio, Source: "default"}

// SampleAll keeps every trace that has no unsampled parent
// (parentbased_always_on): the default of a client command, whose one
// trace was asked for by setting the endpoint.
var SampleAll = Sampling{Name: SamplerParentBasedAlwaysOn, Ratio: 1, Source: "default"}

// The environment variables choosing the sampler.
const (
	envSampler    = "OTEL_TRACES_SAMPLER"
	envSamplerArg = "OTEL_TRACES_SAMPLER_ARG"
)

// String is the sampler as the startup log shows it:
// "parentbased_traceidratio 0.01".
func (s Sampling) String() string {
	if s.usesRatio() {
		return s.Name + " " + strconv.FormatFloat(s.Ratio, 'g', -1, 64)
	}
	return s.Name
}

func (s Sampling) usesRatio() bool {
	return s.Name == SamplerTraceIDRatio || s.Name == SamplerParentBasedTraceIDRatio
}

func (s Sampling) parentBased() bool { return strings.HasPrefix(s.Name, "parentbased_") }

// samplingFrom applies the order: ratio (the --trace-sample-ratio flag, as
// parentbased_traceidratio) when not nil, else OTEL_TRACES_SAMPLER (with
// OTEL_TRACES_SAMPLER_ARG, the ratio, 1 when unset, as the specification
// says), else def (DefaultSampling when its Name is ""). A ratio outside
// [0, 1] or a sampler it does not know is ErrBadSampler, naming the flag
// or variable: an operator who asked for a sampler gets it or is told.
func samplingFrom(ratio *float64, def Sampling) (Sampling, error) {
	if ratio != nil {
		if err := checkSampleRatio(*ratio); err != nil {
			return Sampling{}, err
		}
		return Sampling{Name: SamplerParentBasedTraceIDRatio, Ratio: *ratio, Source: "--trace-sample-ratio"}, nil
	}
	name := strings.ToLower(strings.TrimSpace(os.Getenv(envSampler)))
	if name == "" {
		if def.Name == "" {
			def = DefaultSampling
		}
		return def, nil
	}
	s := Sampling{Name: name, Ratio: 1, Source: envSampler}
	switch name {
	case SamplerAlwaysOn, SamplerParentBasedAlwaysOn:
	case SamplerAlwaysOff, SamplerParentBasedAlwaysOff:
		s.Ratio = 0
	case SamplerTraceIDRatio, SamplerParentBasedTraceIDRatio:
		if arg := strings.TrimSpace(os.Getenv(envSamplerArg)); arg != "" {
			r, err := strconv.ParseFloat(arg, 64)
			if err != nil || !(r >= 0 && r <= 1) {
				return Sampling{}, fmt.Errorf("%w: %s=%q (want a ratio from 0 to 1)", ErrBadSampler, envSamplerArg, arg)
			}
			s.Ratio = r
		}
	default:
		return Sampling{}, fmt.Errorf("%w: %s=%q (want one of %s)", ErrBadSampler, envSampler, name,
			strings.Join(SamplerNames, ", "))
	}
	return s, nil
}

// sdkSampler is the SDK's sampler for s: it decides exactly as decide
// does, for the spans that reach the SDK (those decide keeps, and those of
// other OpenTelemetry users in the process).
func (s Sampling) sdkSampler() sdktrace.Sampler {
	var root sdktrace.Sampler
	switch s.Name {
	case SamplerAlwaysOn, SamplerParentBasedAlwaysOn:
		root = sdktrace.AlwaysSample()
	case SamplerAlwaysOff, SamplerParentBasedAlwaysOff:
		root = sdktrace.NeverSample()
	default:
		root = sdktrace.TraceIDRatioBased(s.Ratio)
	}
	if s.parentBased() {
		return sdktrace.ParentBased(root)
	}
	return root
}

// decider is Sampling's decision made before the SDK is called: a span the
// sampler drops costs no SDK span, no attribute copies and a stack that
// does not grow. Measured with the server in its own process
// (docs/BENCHMARKS.md, "Tracing cost"), the SDK's path for a dropped root
// span — its ID generator, its sampler, a non-recording span and two
// contexts, with the request's attributes copied for the sampler — grew
// each request goroutine's stack (36 % of the server's CPU in copystack)
// and cost a third of the throughput at 1 % sampling.
type decider struct {
	parentBased bool
	// root is the decision for a new trace: always (keep all), never, or by
	// the trace ID when ratio is set.
	always, never bool
	// bound is the SDK's TraceIDRatioBased bound: a trace is kept when the
	// low 63 bits of its ID's last 8 bytes, shifted, are below it.
	bound uint64
}

func newDecider(s Sampling) *decider {
	d := &decider{parentBased: s.parentBased()}
	switch s.Name {
	case SamplerAlwaysOn, SamplerParentBasedAlwaysOn:
		d.always = true
	case SamplerAlwaysOff, SamplerParentBasedAlwaysOff:
		d.never = true
	default:
		switch {
		case s.Ratio >= 1:
			d.always = true
		case s.Ratio <= 0:
			d.never = true
		default:
			d.bound = uint64(s.Ratio * (1 << 63)) // as sdktrace.TraceIDRatioBased
		}
	}
	return d
}

// decide reports whether a span started under ctx is dropped, and returns
// the context to start it (or, dropped, to run under): a dropped new trace
// gets an unsampled span context of its own, so that the spans started
// under it (a commit under an fsync) decide with it instead of each
// starting a trace; a kept new trace carries its pre-drawn trace ID to the
// SDK (idGenerator), which then decides the same on it.
func (d *decider) decide(ctx context.Context) (context.Context, bool) {
	parent := oteltrace.SpanContextFromContext(ctx)
	if parent.IsValid() {
		switch {
		case d.parentBased:
			return ctx, !parent.IsSampled()
		case d.always:
			return ctx, false
		case d.never:
			return ctx, true
		}
		// The SDK decides on the parent's trace ID, as here.
		return ctx, !d.keeps(parent.TraceID())
	}
	if d.always {
		return ctx, false
	}
	tid := newTraceID()
	if d.never || !d.keeps(tid) {
		return unsampledRoot(ctx, tid), true
	}
	return context.WithValue(ctx, traceIDKey{}, tid), false
}

// unsampledRoot returns ctx carrying a new unsampled span context of trace
// tid. It is not inlined, so that decide's frame stays small: decide runs
// near the top of a request goroutine's fresh stack, and a frame that
// crosses its first bound copies the stack (runtime.newstack) on every
// request.
//
//go:noinline
func unsampledRoot(ctx context.Context, tid oteltrace.TraceID) context.Context {
	sc := oteltrace.NewSpanContext(oteltrace.SpanContextConfig{TraceID: tid, SpanID: newSpanID()})
	return oteltrace.ContextWithSpanContext(ctx, sc)
}

// keeps is sdktrace.TraceIDRatioBased's decision on tid.
func (d *decider) keeps(tid oteltrace.TraceID) bool {
	return binary.BigEndian.Uint64(tid[8:16])>>1 < d.bound
}

// traceIDKey carries the trace ID decide drew for a kept new trace.
type traceIDKey struct{}

// idGenerator makes the SDK's IDs: the trace ID decide drew when there is
// one, else random ones from the runtime's per-thread generator, which
// takes no lock (the SDK's default generator serialises on a mutex).
type idGenerator struct{}

func (idGenerator) NewIDs(ctx context.Context) (oteltrace.TraceID, oteltrace.SpanID) {
	if tid, ok := ctx.Value(traceIDKey{}).(oteltrace.TraceID); ok {
		return tid, newSpanID()
	}
	return newTraceID(), newSpanID()
}

func (idGenerator) NewSpanID(context.Context, oteltrace.TraceID) oteltrace.SpanID { return newSpanID() }

// newTraceID draws a random trace ID, never the invalid all-zero one.
func newTraceID() (tid oteltrace.TraceID) {
	for !tid.IsValid() {
		binary.BigEndian.PutUint64(tid[0:8], rand.Uint64())
		binary.BigEndian.PutUint64(tid[8:16], rand.Uint64())
	}
	return tid
}

// newSpanID draws a random span ID, never the invalid all-zero one.
func newSpanID() (sid oteltrace.SpanID) {
	for !sid.IsValid() {
		binary.BigEndian.PutUint64(sid[:], rand.Uint64())
	}
	return sid
}

// NewTracerProvider returns an SDK tracer provider that samples by s, with
// opts added (a span processor: Setup's batcher, or a test's
// tracetest.SpanRecorder), and a function that makes Start use it with
// s's decision before the SDK (UseTracerProvider, for a provider that
// decides alone) and returns the restore of UseTracerProvider.
func NewTracerProvider(s Sampling, opts ...sdktrace.TracerProviderOption) (tp *sdktrace.TracerProvider, use func() (restore func())) {
	opts = append([]sdktrace.TracerProviderOption{
		sdktrace.WithSampler(s.sdkSampler()),
		sdktrace.WithIDGenerator(idGenerator{}),
	}, opts...)
	tp = sdktrace.NewTracerProvider(opts...)
	return tp, func() func() { return useTracer(tp, newDecider(s)) }
}

// checkSampleRatio refuses a --trace-sample-ratio outside [0, 1].
func checkSampleRatio(r float64) error {
	if !(r >= 0 && r <= 1) {
		return fmt.Errorf("%w: --trace-sample-ratio %v (want 0 to 1)", ErrBadSampler, r)
	}
	return nil
}
