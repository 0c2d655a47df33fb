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
	// It wins over the environment. Empty: OTEL_EXPORTER_OTLP_ENDPOINT or
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT decide; when neither is set either,
	// tracing is off.
	Endpoint string
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
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("trace: opentelemetry", "err", err)
	}))

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

	if on, why := tracingOn(cfg.Endpoint); on {
		stop, err := startTracing(ctx, cfg.Endpoint, res)
		if err != nil {
			return nil, err
		}
		stops = append(stops, stop)
		log.Info("trace: exporting spans over OTLP/HTTP", "endpoint", why,
			"service", serviceName(res))
	} else {
		log.Info("trace: tracing off", "why", why)
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

// tracingOn applies Setup's table. why is the endpoint when on, the reason
// when off.
func tracingOn(endpoint string) (on bool, why string) {
	if endpoint != "" {
		return true, endpoint
	}
	env := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if env == "" {
		env = os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	switch {
	case env == "":
		return false, "no --otlp-endpoint and no OTEL_EXPORTER_OTLP_ENDPOINT"
	case strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true"):
		return false, "OTEL_SDK_DISABLED=true"
	case os.Getenv("OTEL_TRACES_EXPORTER") == "none":
		return false, "OTEL_TRACES_EXPORTER=none"
	}
	return true, env
}

// startTracing builds the exporter and provider and makes Start use them.
func startTracing(ctx context.Context, endpoint string, res *resource.Resource) (func(context.Context) error, error) {
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := os.Getenv(name); p != "" && p != "http/protobuf" && p != "http/json" {
			return nil, fmt.Errorf("%w: %s=%s (ustore exports OTLP over HTTP: use http/protobuf and port 4318)",
				ErrUnsupportedProtocol, name, p)
		}
	}
	opts, err := endpointOptions(endpoint)
	if err != nil {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("trace: OTLP exporter: %w", err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
	)
	restore := UseTracerProvider(tp)
	// Other OpenTelemetry users in the process (libraries) see the same
	// provider and propagate W3C trace context like ContextWithRemoteParent.
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(
		propagation.TraceContext{}, propagation.Baggage{}))
	return func(ctx context.Context) error {
		restore()
		if err := tp.Shutdown(ctx); err != nil {
			return fmt.Errorf("trace: tracer provider shutdown: %w", err)
		}
		return nil
	}, nil
}

// endpointOptions turns Config.Endpoint into exporter options; with no
// endpoint the exporter reads the environment itself.
func endpointOptions(endpoint string) ([]otlptracehttp.Option, error) {
	if endpoint == "" {
		return nil, nil
	}
	if !strings.Contains(endpoint, "://") {
		return []otlptracehttp.Option{otlptracehttp.WithEndpoint(endpoint), otlptracehttp.WithInsecure()}, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("%w: %q (want host:port or http(s)://host:port[/path])", ErrBadEndpoint, endpoint)
	}
	opts := []otlptracehttp.Option{
		otlptracehttp.WithEndpoint(u.Host),
		otlptracehttp.WithURLPath(path.Join("/", u.Path, "v1/traces")),
	}
	if u.Scheme == "http" {
		opts = append(opts, otlptracehttp.WithInsecure())
	}
	return opts, nil
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
