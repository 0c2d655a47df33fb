package main

// One trace per client command. When the environment configures tracing
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, read
// as 'ustore serve' reads them), a client command is a root span of
// service ustore-cli, "ustore put", and every request it sends carries
// that span's traceparent, so that the server's request spans (and their
// fsync and commit children) are its children in one trace instead of a
// trace each.

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"ustore/trace"
)

// cliServiceName is the client commands' service.name, unless
// OTEL_SERVICE_NAME says otherwise.
const cliServiceName = "ustore-cli"

// cliTraceFlushMax bounds the flush of the command's spans at its end: a
// collector that is gone or stuck costs a command at most this (one that
// refuses the connection costs nothing: the export fails at once).
const cliTraceFlushMax = 2 * time.Second

// startCommandTrace starts cmd's root span when tracing is configured and
// returns the context to run the command under; end records the command's
// outcome (a failed command's span has status Error), ends the span and
// flushes it. With tracing not configured it returns cmd's context and an
// end that does nothing, at the cost of reading two variables.
//
// A configuration Setup refuses (a bad endpoint, the grpc protocol) is
// one warning line on stderr, and the command runs untraced: tracing is
// never the reason a command fails.
func startCommandTrace(cmd *cobra.Command) (context.Context, func(error)) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	if !trace.Configured("") {
		return ctx, func(error) {}
	}
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{
		Level:       slog.LevelWarn,
		ReplaceAttr: dropTime,
	}))
	shutdown := func(context.Context) error { return nil }
	if !trace.Enabled() { // else this process traces already (a test that set up its own)
		var err error
		shutdown, err = trace.Setup(ctx, trace.Config{ServiceName: cliServiceName, DefaultSampling: trace.SampleAll, ShutdownTimeout: cliTraceFlushMax, Logger: log})
		if err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "ustore: tracing off: %v\n", err)
			return ctx, func(error) {}
		}
	}
	ctx, span := trace.Start(ctx, cmd.CommandPath(), trace.Args(cmd.Flags().Args()))
	return ctx, func(err error) {
		span.RecordError(err)
		span.End()
		// A failed export was logged by Setup's error handler; what is left
		// is a flush cut short by cliTraceFlushMax.
		if err := shutdown(context.Background()); err != nil {
			log.Warn("trace: spans not flushed", "err", err)
		}
	}
}

// dropTime drops slog's time from the CLI's tracing warnings, which are
// read on a terminal as they happen.
func dropTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}
