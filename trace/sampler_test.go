package trace

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// TestSamplingFrom_FlagEnvDefault: --trace-sample-ratio wins over
// OTEL_TRACES_SAMPLER and _ARG, which win over the default; the ratio
// samplers take the argument (1 without one, as the specification says);
// a sampler or ratio this package does not know is refused, naming the
// flag or variable.
func TestSamplingFrom_FlagEnvDefault(t *testing.T) {
	half, two := 0.5, 2.0
	for _, tc := range []struct {
		name         string
		ratio        *float64
		def          Sampling
		sampler, arg string
		want         string // Sampling.String() and Source, or the error
	}{
		{name: "default", want: "parentbased_traceidratio 0.01 default"},
		{name: "default_replaced", def: SampleAll, want: "parentbased_always_on default"},
		{name: "flag", ratio: &half, want: "parentbased_traceidratio 0.5 --trace-sample-ratio"},
		{name: "flag_over_env", ratio: &half, sampler: "always_on", want: "parentbased_traceidratio 0.5 --trace-sample-ratio"},
		{name: "flag_over_default", ratio: &half, def: SampleAll, want: "parentbased_traceidratio 0.5 --trace-sample-ratio"},
		{name: "env_over_default", sampler: "always_off", def: SampleAll, want: "always_off OTEL_TRACES_SAMPLER"},
		{name: "env_ratio", sampler: "parentbased_traceidratio", arg: "0.25", want: "parentbased_traceidratio 0.25 OTEL_TRACES_SAMPLER"},
		{name: "env_ratio_no_arg", sampler: "traceidratio", want: "traceidratio 1 OTEL_TRACES_SAMPLER"},
		{name: "env_case_space", sampler: " ParentBased_Always_On ", want: "parentbased_always_on OTEL_TRACES_SAMPLER"},
		{name: "env_parentbased_off", sampler: "parentbased_always_off", want: "parentbased_always_off OTEL_TRACES_SAMPLER"},
		{name: "flag_out_of_range", ratio: &two, want: "trace: bad sampler: --trace-sample-ratio 2 (want 0 to 1)"},
		{name: "env_unknown", sampler: "jaeger_remote", want: `trace: bad sampler: OTEL_TRACES_SAMPLER="jaeger_remote" (want one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio)`},
		{name: "env_bad_arg", sampler: "traceidratio", arg: "lots", want: `trace: bad sampler: OTEL_TRACES_SAMPLER_ARG="lots" (want a ratio from 0 to 1)`},
		{name: "env_arg_out_of_range", sampler: "parentbased_traceidratio", arg: "-0.1", want: `trace: bad sampler: OTEL_TRACES_SAMPLER_ARG="-0.1" (want a ratio from 0 to 1)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("OTEL_TRACES_SAMPLER", tc.sampler)
			t.Setenv("OTEL_TRACES_SAMPLER_ARG", tc.arg)
			s, err := samplingFrom(tc.ratio, tc.def)
			got := s.String() + " " + s.Source
			if err != nil {
				got = err.Error()
				if !errors.Is(err, ErrBadSampler) {
					t.Errorf("%v is not ErrBadSampler", err)
				}
			}
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestSetup_Sampler_Logged: Setup uses the sampler Config and the
// environment choose, says which in its log line and through
// ExportSampling, and refuses a ratio out of range before anything starts.
func TestSetup_Sampler_Logged(t *testing.T) {
	clearOTELEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "127.0.0.1:1")
	t.Setenv("OTEL_TRACES_SAMPLER", "traceidratio")
	t.Setenv("OTEL_TRACES_SAMPLER_ARG", "0.125")
	var buf syncBuffer
	shutdown := mustSetup(t, Config{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if s := ExportSampling(); s.String() != "traceidratio 0.125" || s.Source != "OTEL_TRACES_SAMPLER" {
		t.Errorf("ExportSampling() = %+v", s)
	}
	if !strings.Contains(buf.String(), `sampler="traceidratio 0.125" sampler_source=OTEL_TRACES_SAMPLER`) {
		t.Errorf("log lacks the sampler:\n%s", buf.String())
	}
	_ = shutdown(context.Background())
	if s := ExportSampling(); s != (Sampling{}) {
		t.Errorf("after shutdown ExportSampling() = %+v", s)
	}
	bad := 1.5
	if _, err := Setup(context.Background(), Config{SampleRatio: &bad, Logger: quiet}); !errors.Is(err, ErrBadSampler) {
		t.Errorf("Setup with ratio 1.5: %v, want ErrBadSampler", err)
	}
}

// useSampling makes Start sample by s and record into a span recorder.
func useSampling(t *testing.T, s Sampling) *tracetest.SpanRecorder {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp, use := NewTracerProvider(s, sdktrace.WithSpanProcessor(rec))
	restore := use()
	t.Cleanup(func() {
		restore()
		_ = tp.Shutdown(context.Background())
	})
	return rec
}

// remote is a context under a client's span, sampled or not.
func remote(sampled bool) context.Context {
	sc := oteltrace.NewSpanContext(oteltrace.SpanContextConfig{
		TraceID: oteltrace.TraceID{1, 2, 3}, SpanID: oteltrace.SpanID{4, 5}, Remote: true,
	})
	if sampled {
		sc = sc.WithTraceFlags(oteltrace.FlagsSampled)
	}
	return oteltrace.ContextWithSpanContext(context.Background(), sc)
}

// TestStart_Unsampled_NoRecordingSpan: under parentbased_traceidratio 0 a
// new trace is dropped before the SDK — no recording span, nothing in the
// recorder, and the spans started under it are dropped with it instead of
// starting traces of their own — while a client's sampled trace is kept
// and its unsampled one is not.
func TestStart_Unsampled_NoRecordingSpan(t *testing.T) {
	rec := useSampling(t, Sampling{Name: SamplerParentBasedTraceIDRatio, Ratio: 0})
	ctx, s := Start(context.Background(), "ustore.stat", Ino(7))
	if s.IsRecording() || s.s != nil {
		t.Errorf("a new trace at ratio 0 has a span: %v", s.s)
	}
	sc := oteltrace.SpanContextFromContext(ctx)
	if !sc.IsValid() || sc.IsSampled() {
		t.Errorf("the dropped request's context carries %v, want a valid unsampled span context", sc)
	}
	if _, child := Start(ctx, "journal.commit"); child.IsRecording() {
		t.Error("a span under a dropped one records")
	}
	if _, s := Start(remote(false), "ustore.stat"); s.IsRecording() {
		t.Error("a span under a client's unsampled span records")
	}
	_, s = Start(remote(true), "ustore.fsync")
	if !s.IsRecording() {
		t.Fatal("a span under a client's sampled span does not record")
	}
	s.End()
	if got := rec.Started(); len(got) != 1 || got[0].Name() != "ustore.fsync" || got[0].Parent().SpanID() != (oteltrace.SpanID{4, 5}) {
		t.Errorf("recorded %d spans, want the one ustore.fsync under the client's span", len(got))
	}
}

// TestStart_Unsampled_Cheap: a dropped span costs no SDK span: under an
// unsampled parent nothing is allocated, and a dropped new trace costs
// only its unsampled span context (the SDK's path allocated 5 objects and
// grew the request goroutine's stack).
func TestStart_Unsampled_Cheap(t *testing.T) {
	useSampling(t, Sampling{Name: SamplerParentBasedTraceIDRatio, Ratio: 0})
	parent := remote(false)
	if n := testing.AllocsPerRun(1000, func() {
		_, s := Start(parent, "ustore.stat", Ino(7))
		s.End()
	}); n != 0 {
		t.Errorf("a span under an unsampled parent allocates %v objects, want 0", n)
	}
	root := context.Background()
	if n := testing.AllocsPerRun(1000, func() {
		_, s := Start(root, "ustore.stat", Ino(7))
		s.End()
	}); n > 2 {
		t.Errorf("a dropped new trace allocates %v objects, want at most 2", n)
	}
}

// TestDecider_Decide_MatchesSDK: for every sampler, the decision made
// before the SDK is the one the SDK's own sampler makes, for new traces
// and under sampled and unsampled parents, so that a span decide keeps is
// recorded by the SDK and one it drops would have been dropped anyway.
func TestDecider_Decide_MatchesSDK(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	for _, s := range []Sampling{
		{Name: SamplerAlwaysOn}, {Name: SamplerAlwaysOff}, {Name: SamplerParentBasedAlwaysOn},
		{Name: SamplerParentBasedAlwaysOff}, {Name: SamplerTraceIDRatio, Ratio: 0.3},
		{Name: SamplerParentBasedTraceIDRatio, Ratio: 0.3},
	} {
		d := newDecider(s)
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(s.sdkSampler()), sdktrace.WithIDGenerator(idGenerator{}),
			sdktrace.WithSpanProcessor(rec))
		tr := tp.Tracer("test")
		kept := 0
		for i := range 2000 {
			var ctx context.Context
			switch i % 3 {
			case 0:
				ctx = context.Background()
			default:
				sc := oteltrace.NewSpanContext(oteltrace.SpanContextConfig{TraceID: newTraceID(), SpanID: newSpanID(), Remote: true})
				if i%3 == 1 {
					sc = sc.WithTraceFlags(oteltrace.FlagsSampled)
				}
				ctx = oteltrace.ContextWithSpanContext(context.Background(), sc)
			}
			dctx, drop := d.decide(ctx)
			if drop {
				// What the SDK's sampler decides on the same trace ID: the
				// parent's, or the one decide drew for a new trace.
				tid := oteltrace.SpanContextFromContext(dctx).TraceID()
				if !tid.IsValid() {
					t.Fatalf("%v: a dropped span's context has no trace ID (case %d)", s, i%3)
				}
				r := s.sdkSampler().ShouldSample(sdktrace.SamplingParameters{ParentContext: ctx, TraceID: tid, Name: "x"})
				if r.Decision != sdktrace.Drop {
					t.Fatalf("%v: decide dropped a span the SDK samples (case %d)", s, i%3)
				}
				continue
			}
			_, sp := tr.Start(dctx, "x")
			if !sp.IsRecording() {
				t.Fatalf("%v: decide kept a span the SDK drops (case %d)", s, i%3)
			}
			kept++
		}
		if s.usesRatio() && (kept < 2000*0.2 || kept > 2000*0.8) {
			t.Errorf("%v kept %d of 2000", s, kept)
		}
	}
}

// BenchmarkStart_Unsampled is a request span that 1 % sampling drops: a
// new trace (the common case of a client that sends no traceparent).
func BenchmarkStart_Unsampled(b *testing.B) {
	tp, use := NewTracerProvider(Sampling{Name: SamplerParentBasedTraceIDRatio, Ratio: 0.01})
	defer use()()
	defer tp.Shutdown(context.Background())
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, s := Start(ctx, "ustore.stat", Op("stat"))
		s.End()
	}
}
