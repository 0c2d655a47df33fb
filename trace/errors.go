package trace

import "errors"

var (
	// ErrAlreadySetUp: Setup was called while an earlier Setup had not been
	// shut down.
	ErrAlreadySetUp = errors.New("trace: already set up (call the previous Setup's shutdown first)")
	// ErrUnsupportedProtocol: the environment asks for an OTLP protocol other
	// than HTTP (see Setup for why only HTTP).
	ErrUnsupportedProtocol = errors.New("trace: unsupported OTLP protocol")
	// ErrBadEndpoint: Config.Endpoint is neither host:port nor an http(s) URL.
	ErrBadEndpoint = errors.New("trace: bad OTLP endpoint")
	// ErrBadSampler: --trace-sample-ratio, OTEL_TRACES_SAMPLER or
	// OTEL_TRACES_SAMPLER_ARG names no sampler this package has.
	ErrBadSampler = errors.New("trace: bad sampler")
)
