package trace

import (
	"context"
	"log/slog"
	"os"

	"github.com/go-logr/logr"
)

// sdkLogSink is the OpenTelemetry SDK's logger (otel.SetLogger): its
// messages become lines of Setup's slog logger, "trace: opentelemetry:
// <message>", instead of the SDK's default, a bare Go log line on stderr
// that names only the SDK's source file ("internal_logging.go:50").
//
// The SDK logs at logr verbosity 0 (errors), 1 (warnings), 4 (info) and 8
// (debug, every span). Errors and warnings are slog warnings (the SDK
// carries on after either); info is slog debug; debug is dropped, as a
// line a span would drown the log.
type sdkLogSink struct {
	log    *slog.Logger
	name   string
	values []any
}

// sdkVerbosityMax is the highest logr verbosity passed on.
const sdkVerbosityMax = 4

var _ logr.LogSink = (*sdkLogSink)(nil)

func (s *sdkLogSink) Init(logr.RuntimeInfo) {}

func (s *sdkLogSink) Enabled(level int) bool { return level <= sdkVerbosityMax }

func (s *sdkLogSink) Info(level int, msg string, kv ...any) {
	lvl := slog.LevelWarn
	if level > 1 {
		lvl = slog.LevelDebug
	}
	s.log.Log(context.Background(), lvl, s.message(msg), s.args(kv)...)
}

func (s *sdkLogSink) Error(err error, msg string, kv ...any) {
	if msg == "parse url" && isEndpointVariable(kv) {
		// The exporter's own reading of OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT
		// fails on "host:port"; Setup read the variable itself
		// (tracingTarget) and refused it if it could not, and the URL it
		// gave the exporter overrides the variable.
		return
	}
	s.log.Warn(s.message(msg), append([]any{"err", err}, s.args(kv)...)...)
}

func (s *sdkLogSink) WithValues(kv ...any) logr.LogSink {
	c := *s
	c.values = append(append([]any(nil), s.values...), kv...)
	return &c
}

func (s *sdkLogSink) WithName(name string) logr.LogSink {
	c := *s
	if c.name != "" {
		name = c.name + "/" + name
	}
	c.name = name
	return &c
}

func (s *sdkLogSink) message(msg string) string {
	if s.name != "" {
		return "trace: opentelemetry: " + s.name + ": " + msg
	}
	return "trace: opentelemetry: " + msg
}

func (s *sdkLogSink) args(kv []any) []any {
	if len(s.values) == 0 {
		return kv
	}
	return append(append([]any(nil), s.values...), kv...)
}

// isEndpointVariable reports whether the key-value list's "input" is the
// value of one of the endpoint variables.
func isEndpointVariable(kv []any) bool {
	for i := 0; i+1 < len(kv); i += 2 {
		if k, _ := kv[i].(string); k == "input" {
			v, _ := kv[i+1].(string)
			return v != "" && (v == os.Getenv(envEndpoint) || v == os.Getenv(envTracesEndpoint))
		}
	}
	return false
}
