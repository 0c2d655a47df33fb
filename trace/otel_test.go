package trace

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
)

var quiet = slog.New(slog.DiscardHandler)

// clearOTELEnv unsets the variables Setup reads, whatever the machine has.
func clearOTELEnv(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SDK_DISABLED",
		"OTEL_TRACES_EXPORTER", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER",
		"OTEL_TRACES_SAMPLER_ARG"} {
		t.Setenv(k, "")
	}
}

func mustSetup(t *testing.T, cfg Config) func(context.Context) error {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	shutdown, err := Setup(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = shutdown(context.Background()) })
	return shutdown
}

// TestSetup_NothingConfigured_Off: no endpoint anywhere, no metrics address
// — spans and records stay no-ops.
func TestSetup_NothingConfigured_Off(t *testing.T) {
	clearOTELEnv(t)
	shutdown := mustSetup(t, Config{})
	if tracer.Load() != nil || meters.Load() != nil {
		t.Fatal("tracing or metrics on with nothing configured")
	}
	if _, s := Start(context.Background(), "x"); s.IsRecording() {
		t.Fatal("span recording with tracing off")
	}
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestSetup_Env_Table checks Setup's table for the environment, and that
// the endpoint reported is the URL used and names its source.
func TestSetup_Env_Table(t *testing.T) {
	for _, c := range []struct {
		name     string
		endpoint string
		env      map[string]string
		url      string // "": off
		source   string
	}{
		{"flag", "127.0.0.1:1", nil, "http://127.0.0.1:1/v1/traces", "--otlp-endpoint"},
		{"flag beats env", "https://c:1/otlp", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:2"},
			"https://c:1/otlp/v1/traces", "--otlp-endpoint"},
		{"flag beats disable", "127.0.0.1:1", map[string]string{"OTEL_SDK_DISABLED": "true"}, "http://127.0.0.1:1/v1/traces", "--otlp-endpoint"},
		{"env", "", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"},
			"http://127.0.0.1:1/v1/traces", "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"env host:port", "", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "127.0.0.1:1"},
			"http://127.0.0.1:1/v1/traces", "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"env name:port", "", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"},
			"http://localhost:4318/v1/traces", "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"traces env as is", "", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1/custom"},
			"http://127.0.0.1:1/custom", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
		{"traces env no path", "", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "127.0.0.1:1",
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:2"}, "http://127.0.0.1:1/", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
		{"env disabled", "", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "TRUE"}, "", ""},
		{"env exporter none", "", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none"}, "", ""},
		{"nothing", "", nil, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			clearOTELEnv(t)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			target, off, err := tracingTarget(c.endpoint)
			if err != nil || target.URL != c.url || target.Source != c.source {
				t.Fatalf("tracingTarget: %+v (off: %q) %v, want URL %q from %q", target, off, err, c.url, c.source)
			}
			if Configured(c.endpoint) != (c.url != "") {
				t.Fatalf("Configured = %v, want %v", Configured(c.endpoint), c.url != "")
			}
		})
	}
}

// TestSetup_BadEnvEndpoint_Refused: an endpoint variable that is neither
// form is refused naming the variable, as a bad --otlp-endpoint is.
func TestSetup_BadEnvEndpoint_Refused(t *testing.T) {
	clearOTELEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://x:1")
	_, err := Setup(context.Background(), Config{Logger: quiet})
	if !errors.Is(err, ErrBadEndpoint) || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_ENDPOINT") {
		t.Fatalf("Setup: %v, want ErrBadEndpoint naming the variable", err)
	}
	if !Configured("") {
		t.Fatal("Configured: false for a bad endpoint, which Setup refuses rather than ignores")
	}
}

// TestSetup_EnvHostPort_LogsEndpoint: with OTEL_EXPORTER_OTLP_ENDPOINT in
// host:port form, Setup's log names the URL used and its source, Exporting
// reports them while tracing is on, and the SDK's own failed parse of the
// variable (a raw "internal_logging.go" line before) says nothing.
func TestSetup_EnvHostPort_LogsEndpoint(t *testing.T) {
	clearOTELEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "127.0.0.1:1")
	var buf syncBuffer
	shutdown := mustSetup(t, Config{Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	url, source := Exporting()
	if url != "http://127.0.0.1:1/v1/traces" || source != "OTEL_EXPORTER_OTLP_ENDPOINT" {
		t.Errorf("Exporting() = %q, %q", url, source)
	}
	if err := shutdown(context.Background()); err != nil {
		t.Logf("shutdown (no collector): %v", err)
	}
	if url, source := Exporting(); url != "" || source != "" {
		t.Errorf("after shutdown Exporting() = %q, %q, want nothing", url, source)
	}
	log := buf.String()
	if !strings.Contains(log, `msg="trace: exporting spans over OTLP/HTTP" endpoint=http://127.0.0.1:1/v1/traces source=OTEL_EXPORTER_OTLP_ENDPOINT`) {
		t.Errorf("log lacks the endpoint and its source:\n%s", log)
	}
	if strings.Contains(log, "parse url") {
		t.Errorf("the SDK's parse error of the variable is logged:\n%s", log)
	}
}

// TestSetup_SDKLog_ThroughLogger: what the OpenTelemetry SDK logs itself
// (here an exporter given a URL it cannot parse) comes out of Setup's
// logger as one line, not as the SDK's default stderr line.
func TestSetup_SDKLog_ThroughLogger(t *testing.T) {
	clearOTELEnv(t)
	var buf syncBuffer
	mustSetup(t, Config{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if _, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL("http://%zz")); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var got []string
	for _, l := range lines {
		if strings.Contains(l, "opentelemetry") {
			got = append(got, l)
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], `level=WARN msg="trace: opentelemetry: otlptrace: parse endpoint url"`) ||
		!strings.Contains(got[0], `url=http://%zz`) {
		t.Fatalf("want one WARN line from the SDK, got:\n%s", buf.String())
	}
}

// syncBuffer is a bytes.Buffer safe for the SDK's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSetup_GRPCProtocol_Refused: an OTLP protocol Setup does not speak is
// an error, not a silent switch to HTTP; and a failed Setup leaves the
// package free for the next one.
func TestSetup_GRPCProtocol_Refused(t *testing.T) {
	clearOTELEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	_, err := Setup(context.Background(), Config{Endpoint: "127.0.0.1:4317", Logger: quiet})
	if !errors.Is(err, ErrUnsupportedProtocol) {
		t.Fatalf("Setup: %v, want ErrUnsupportedProtocol", err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
	mustSetup(t, Config{Endpoint: "127.0.0.1:4318"})
}

func TestSetup_BadEndpoint_Refused(t *testing.T) {
	clearOTELEnv(t)
	for _, ep := range []string{"ftp://x:1", "http://", "http://%zz"} {
		if _, err := Setup(context.Background(), Config{Endpoint: ep, Logger: quiet}); !errors.Is(err, ErrBadEndpoint) {
			t.Errorf("Setup(%q): %v, want ErrBadEndpoint", ep, err)
		}
	}
}

func TestSetup_Twice_Refused(t *testing.T) {
	clearOTELEnv(t)
	shutdown := mustSetup(t, Config{})
	if _, err := Setup(context.Background(), Config{Logger: quiet}); !errors.Is(err, ErrAlreadySetUp) {
		t.Fatalf("second Setup: %v, want ErrAlreadySetUp", err)
	}
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mustSetup(t, Config{}) // free again
}

// TestSetup_StuckCollector_ShutdownBounded proves Invariant 6: with spans
// queued and a collector that accepts but never answers (the exporter alone
// would wait out its 10 s timeout), shutdown returns within ShutdownTimeout,
// even given a context without a deadline. A refused connection fails at
// once and is the easy case; TestSetup_NoCollector_ShutdownFast covers it.
func TestSetup_StuckCollector_ShutdownBounded(t *testing.T) {
	clearOTELEnv(t)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release) // before srv.Close, which waits for the handlers
	shutdownBounded(t, srv.Listener.Addr().String())
}

func TestSetup_NoCollector_ShutdownFast(t *testing.T) {
	clearOTELEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	shutdownBounded(t, closed)
}

func shutdownBounded(t *testing.T, endpoint string) {
	t.Helper()
	const timeout = 300 * time.Millisecond
	shutdown := mustSetup(t, Config{Endpoint: endpoint, ShutdownTimeout: timeout})
	for range 10 {
		_, s := Start(context.Background(), "ustore.write")
		s.End()
	}
	began := time.Now()
	err := shutdown(context.Background())
	took := time.Since(began)
	t.Logf("shutdown took %v: %v", took, err)
	if took > timeout+time.Second {
		t.Fatalf("shutdown took %v with a %v timeout", took, timeout)
	}
	if tracer.Load() != nil {
		t.Fatal("tracer still installed after shutdown")
	}
}

// TestSetup_Endpoint_Forms: each form of Config.Endpoint reaches the
// collector at the path the OTLP specification gives (base URL +
// /v1/traces), and the resource says service.name (env wins over Config).
func TestSetup_Endpoint_Forms(t *testing.T) {
	var (
		mu    sync.Mutex
		paths []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		if len(body) > 0 {
			paths = append(paths, r.URL.Path)
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	host := srv.Listener.Addr().String()
	for _, c := range []struct{ endpoint, env, tracesEnv, path string }{
		{host, "", "", "/v1/traces"},
		{"http://" + host, "", "", "/v1/traces"},
		{"http://" + host + "/otlp", "", "", "/otlp/v1/traces"},
		{"", "http://" + host, "", "/v1/traces"},
		{"", host, "", "/v1/traces"}, // the SDK alone posts to https://localhost:4318
		{"", "", "http://" + host + "/custom", "/custom"},
	} {
		clearOTELEnv(t)
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.env)
		t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", c.tracesEnv)
		mu.Lock()
		paths = nil
		mu.Unlock()
		shutdown := mustSetup(t, Config{Endpoint: c.endpoint, DefaultSampling: SampleAll})
		_, s := Start(context.Background(), "ustore.write")
		s.End()
		if err := shutdown(context.Background()); err != nil {
			t.Fatalf("endpoint %q env %q: shutdown: %v", c.endpoint, c.env, err)
		}
		mu.Lock()
		if len(paths) != 1 || paths[0] != c.path {
			t.Errorf("endpoint %q env %q: exports to %v, want one to %s", c.endpoint, c.env, paths, c.path)
		}
		mu.Unlock()
	}
}

func TestNewResource_ServiceName(t *testing.T) {
	clearOTELEnv(t)
	for _, c := range []struct{ cfg, env, want string }{
		{"", "", "ustore"},
		{"ustore-test", "", "ustore-test"},
		{"ustore-test", "from-env", "from-env"},
	} {
		t.Setenv("OTEL_SERVICE_NAME", c.env)
		res, err := newResource(context.Background(), c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := serviceName(res); got != c.want {
			t.Errorf("Config %q env %q: service.name %q, want %q", c.cfg, c.env, got, c.want)
		}
	}
}
