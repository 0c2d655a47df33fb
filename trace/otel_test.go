package trace

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

var quiet = slog.New(slog.DiscardHandler)

// clearOTELEnv unsets the variables Setup reads, whatever the machine has.
func clearOTELEnv(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SDK_DISABLED",
		"OTEL_TRACES_EXPORTER", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"} {
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

// TestSetup_Env_Table checks Setup's table for the environment.
func TestSetup_Env_Table(t *testing.T) {
	for _, c := range []struct {
		name     string
		endpoint string
		env      map[string]string
		on       bool
	}{
		{"flag", "127.0.0.1:1", nil, true},
		{"flag beats disable", "127.0.0.1:1", map[string]string{"OTEL_SDK_DISABLED": "true"}, true},
		{"env", "", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, true},
		{"traces env", "", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1/v1/traces"}, true},
		{"env disabled", "", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "TRUE"}, false},
		{"env exporter none", "", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none"}, false},
		{"nothing", "", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			clearOTELEnv(t)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			if on, why := tracingOn(c.endpoint); on != c.on {
				t.Fatalf("tracing on %v (%s), want %v", on, why, c.on)
			}
		})
	}
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
	for _, c := range []struct{ endpoint, env, path string }{
		{host, "", "/v1/traces"},
		{"http://" + host, "", "/v1/traces"},
		{"http://" + host + "/otlp", "", "/otlp/v1/traces"},
		{"", "http://" + host, "/v1/traces"},
	} {
		clearOTELEnv(t)
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.env)
		mu.Lock()
		paths = nil
		mu.Unlock()
		shutdown := mustSetup(t, Config{Endpoint: c.endpoint})
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
