package trace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// Config says where traces and metrics go. The zero value turns everything
// off unless the standard OTEL_* environment variables turn tracing on.
type Config struct {
	// Endpoint is the OTLP/HTTP collector traces are exported to (flag
	// --otlp-endpoint): "host:port" (plain HTTP) or a base URL such as
	// "http://127.0.0.1:4318" or "https://collector:4318", to which
	// "/v1/traces" is appended as OTEL_EXPORTER_OTLP_ENDPOINT would have it.
	// It wins over the environment. Empty: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
	// (used as it is) or OTEL_EXPORTER_OTLP_ENDPOINT (the same two forms)
	// decide; when neither is set either, tracing is off.
	Endpoint string
	// SampleRatio, when not nil, is the fraction of new traces kept, with
	// the parent's decision followed (parentbased_traceidratio; flag
	// --trace-sample-ratio). It wins over OTEL_TRACES_SAMPLER and
	// OTEL_TRACES_SAMPLER_ARG, which decide when it is nil; with neither,
	// DefaultSampling does (sampler.go says why).
	SampleRatio *float64
	// DefaultSampling, when its Name is set, replaces DefaultSampling as
	// the sampler when neither SampleRatio nor the environment names one:
	// a client command, whose one trace was asked for, keeps it
	// (SampleAll).
	DefaultSampling Sampling
	// ServiceName is the resource's service.name; "" means "ustore".
	// OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES)
	// overrides it, as the OpenTelemetry specification asks.
	ServiceName string
	// MetricsAddr is the TCP address the Prometheus /metrics endpoint listens
	// on (e.g. "127.0.0.1:9464"; port 0 picks a free one); "" turns metrics off.
	MetricsAddr string
	// Profiling also serves Go's runtime profiles (net/http/pprof) under
	// /debug/pprof/ on MetricsAddr, for finding where a server's time goes;
	// off by default, since a CPU profile costs the server while it runs.
	Profiling bool
	// ShutdownTimeout bounds the shutdown function Setup returns, whatever
	// context it is given; 0 means DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// Logger receives what Setup decided and the exporters' errors; nil
	// means slog.Default().
	Logger *slog.Logger
}

// ErrProfilingWithoutMetrics: profiles are served on the metrics address,
// and none was given.
var ErrProfilingWithoutMetrics = errors.New("trace: profiling is served on the metrics address (--metrics-addr): give one")

// DefaultServiceName is service.name when neither Config nor the
// environment names one.
const DefaultServiceName = "ustore"

// DefaultShutdownTimeout bounds shutdown when Config.ShutdownTimeout is 0.
// Without a bound, the OTLP exporter waits out its 10 s export timeout when no
// collector listens (TracerProvider.Shutdown blocked 10.0 s, the export
// timeout, in a test with no collector on the port); a daemon that is
// stopping must not.
const DefaultShutdownTimeout = 3 * time.Second

// active is set while a Setup has not been shut down; Setup refuses to run
// twice at once, so that providers are never leaked.
var active atomic.Bool

// Setup starts what cfg and the environment ask for: an OTLP/HTTP trace
// exporter behind a batch span processor, and a Prometheus /metrics
// endpoint for the histograms of metrics.go. Until it is called, and after
// shutdown, Start and the Record functions are no-ops that cost a few ns.
//
// Whether tracing is on:
//
//	cfg.Endpoint  OTLP endpoint env   OTEL_SDK_DISABLED=true or
//	                                  OTEL_TRACES_EXPORTER=none   tracing
//	set           any                 any                         on, to cfg.Endpoint
//	""            set                 no                          on, to the env's endpoint
//	""            set                 yes                         off
//	""            unset               any                         off
//
// OTLP/HTTP and not gRPC: http/protobuf is the specification's default
// protocol (port 4318), each export is one POST that fails at once when
// nothing listens (no connection state to reconnect), it can be checked
// with curl, and the binary is no smaller with gRPC (both exporters link
// grpc). OTEL_EXPORTER_OTLP_PROTOCOL=grpc is refused with
// ErrUnsupportedProtocol rather than silently sent over HTTP.
//
// The returned shutdown flushes and stops everything under
// min(ctx's deadline, cfg.ShutdownTimeout), returns the package to its
// no-op state, and may be called more than once.
func Setup(ctx context.Context, cfg Config) (shutdown func(context.Context) error, err error) {
	if cfg.Profiling && cfg.MetricsAddr == "" {
		return nil, ErrProfilingWithoutMetrics
	}
	if r := cfg.SampleRatio; r != nil {
		if err := checkSampleRatio(*r); err != nil { // also when tracing is off
			return nil, err
		}
	}
	if !active.CompareAndSwap(false, true) {
		return nil, ErrAlreadySetUp
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	timeout := cfg.ShutdownTimeout
	if timeout <= 0 {
		timeout = DefaultShutdownTimeout
	}
	// Everything the SDK has to say goes through log, one line each: the
	// errors it hands to otel.Handle (a failed export) and what it logs
	// itself (by default a raw "internal_logging.go:50" line on stderr).
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("trace: opentelemetry", "err", err)
	}))
	otel.SetLogger(logr.New(&sdkLogSink{log: log}))

	// stops are the started parts' shutdowns; mu keeps two concurrent
	// shutdown calls from running one twice.
	var (
		mu    sync.Mutex
		stops []func(context.Context) error
	)
	stopAll := func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		mu.Lock()
		defer mu.Unlock()
		var errs []error
		// Last started, first stopped: metrics (the server, then the meter
		// provider it reads), then tracing (flushing queued spans).
		for i := len(stops) - 1; i >= 0; i-- {
			errs = append(errs, stops[i](ctx))
		}
		stops = nil
		if active.CompareAndSwap(true, false) {
			log.Debug("trace: shut down")
		}
		return errors.Join(errs...)
	}
	defer func() {
		if err != nil {
			_ = stopAll(context.Background())
		}
	}()

	res, err := newResource(ctx, cfg.ServiceName)
	if err != nil {
		return nil, err
	}

	target, off, err := tracingTarget(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	if target.URL != "" {
		if target.Sampling, err = samplingFrom(cfg.SampleRatio, cfg.DefaultSampling); err != nil {
			return nil, err
		}
		stop, err := startTracing(ctx, target, res)
		if err != nil {
			return nil, err
		}
		stops = append(stops, stop)
		log.Info("trace: exporting spans over OTLP/HTTP", "endpoint", target.URL, "source", target.Source,
			"service", serviceName(res), "sampler", target.Sampling.String(), "sampler_source", target.Sampling.Source)
	} else {
		log.Info("trace: tracing off", "why", off)
	}

	if cfg.MetricsAddr != "" {
		stop, addr, err := startMetrics(res, cfg.MetricsAddr, cfg.Profiling, log)
		if err != nil {
			return nil, err
		}
		stops = append(stops, stop)
		log.Info("trace: serving Prometheus metrics", "url", "http://"+addr+"/metrics")
		if cfg.Profiling {
			log.Info("trace: serving Go profiles", "url", "http://"+addr+"/debug/pprof/")
		}
	}
	return stopAll, nil
}

// exportTarget is where spans go and who asked for it.
type exportTarget struct {
	// URL is the full URL the exporter POSTs spans to,
	// "http://127.0.0.1:4318/v1/traces".
	URL string
	// Source names what gave it: "--otlp-endpoint" (Config.Endpoint),
	// "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" or "OTEL_EXPORTER_OTLP_ENDPOINT".
	Source string
	// Sampling is the sampler the spans are kept by.
	Sampling Sampling
}

// The environment variables naming the collector, most specific first.
const (
	envTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
)

// tracingTarget applies Setup's table: where spans go, or why tracing is
// off (target.URL == ""). err is ErrBadEndpoint for an endpoint that
// cannot be read.
func tracingTarget(endpoint string) (target exportTarget, off string, err error) {
	if endpoint != "" {
		u, err := endpointURL("--otlp-endpoint", endpoint, false)
		return exportTarget{URL: u, Source: "--otlp-endpoint"}, "", err
	}
	name, env := envTracesEndpoint, os.Getenv(envTracesEndpoint)
	if env == "" {
		name, env = envEndpoint, os.Getenv(envEndpoint)
	}
	switch {
	case env == "":
		return exportTarget{}, "no --otlp-endpoint and no " + envEndpoint, nil
	case strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true"):
		return exportTarget{}, "OTEL_SDK_DISABLED=true", nil
	case os.Getenv("OTEL_TRACES_EXPORTER") == "none":
		return exportTarget{}, "OTEL_TRACES_EXPORTER=none", nil
	}
	u, err := endpointURL(name, env, name == envTracesEndpoint)
	return exportTarget{URL: u, Source: name}, "", err
}

// Configured reports whether Setup, given endpoint as Config.Endpoint,
// would turn tracing on: a command that only traces when asked to (the
// client commands, which read the environment alone) tests it before it
// pays for Setup.
func Configured(endpoint string) bool {
	target, _, err := tracingTarget(endpoint)
	return target.URL != "" || err != nil
}

// endpointURL is the URL spans are POSTed to for an endpoint given as
// "host:port" (plain HTTP: the form --otlp-endpoint documents, and one
// that the exporter's own reading of OTEL_EXPORTER_OTLP_ENDPOINT turns
// into https://localhost:4318 after a parse error) or as an http(s) URL.
// A base endpoint gets "/v1/traces" appended; a per-signal one
// (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is used as it is, "/" when it has
// no path, as the OpenTelemetry specification says.
// source names the flag or variable endpoint came from, for the error.
func endpointURL(source, endpoint string, perSignal bool) (string, error) {
	raw := endpoint
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("%w: %s=%q (want host:port or http(s)://host:port[/path])", ErrBadEndpoint, source, endpoint)
	}
	switch {
	case !perSignal:
		u.Path = path.Join("/", u.Path, "v1/traces")
	case u.Path == "":
		u.Path = "/"
	}
	return u.String(), nil
}

// exporting is the target of the Setup in force; nil while tracing is off.
var exporting atomic.Pointer[exportTarget]

// Exporting returns where spans go while a Setup turned tracing on: the
// full URL and what named it ("--otlp-endpoint" or the environment
// variable), for a command's start-up log line. Both are "" while tracing
// is off.
func Exporting() (url, source string) {
	if t := exporting.Load(); t != nil {
		return t.URL, t.Source
	}
	return "", ""
}

// ExportSampling returns the sampler in force while a Setup turned tracing
// on, for a command's start-up log line; the zero Sampling while tracing
// is off.
func ExportSampling() Sampling {
	if t := exporting.Load(); t != nil {
		return t.Sampling
	}
	return Sampling{}
}

// startTracing builds the exporter and provider and makes Start use them.
func startTracing(ctx context.Context, target exportTarget, res *resource.Resource) (func(context.Context) error, error) {
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := os.Getenv(name); p != "" && p != "http/protobuf" && p != "http/json" {
			return nil, fmt.Errorf("%w: %s=%s (ustore exports OTLP over HTTP: use http/protobuf and port 4318)",
				ErrUnsupportedProtocol, name, p)
		}
	}
	// The URL always comes from tracingTarget, also when the environment
	// named it, so that "host:port" means plain HTTP there as it does for
	// --otlp-endpoint. The exporter still reads the rest of
	// OTEL_EXPORTER_OTLP_* (headers, timeout, certificates, compression).
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(target.URL))
	if err != nil {
		return nil, fmt.Errorf("trace: OTLP exporter: %w", err)
	}
	tp, use := NewTracerProvider(target.Sampling,
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
	)
	restore := use()
	exporting.Store(&target)
	// Other OpenTelemetry users in the process (libraries) see the same
	// provider and propagate W3C trace context like ContextWithRemoteParent.
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(
		propagation.TraceContext{}, propagation.Baggage{}))
	return func(ctx context.Context) error {
		restore()
		exporting.CompareAndSwap(&target, nil)
		if err := tp.Shutdown(ctx); err != nil {
			return fmt.Errorf("trace: tracer provider shutdown: %w", err)
		}
		return nil
	}, nil
}

// newResource describes this process: service.name (Config's, overridden by
// the environment), host, pid and the SDK. The schema is semconv v1.43.0,
// the SDK's own: any other version fails with "conflicting Schema URL".
func newResource(ctx context.Context, name string) (*resource.Resource, error) {
	if name == "" {
		name = DefaultServiceName
	}
	res, err := resource.New(ctx,
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithTelemetrySDK(),
		resource.WithHost(),
		resource.WithProcessPID(),
		resource.WithAttributes(semconv.ServiceName(name)),
		resource.WithFromEnv(), // last, so that OTEL_SERVICE_NAME wins
	)
	if err != nil {
		return nil, fmt.Errorf("trace: resource: %w", err)
	}
	return res, nil
}

func serviceName(res *resource.Resource) string {
	v, _ := res.Set().Value(semconv.ServiceNameKey)
	return v.AsString()
}
