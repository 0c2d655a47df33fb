package main

// `ustore serve --ebpf auto|on|off`: the BPF programs of package ebpf,
// attached to this server process for its life. auto (the default)
// attaches what the kernel and the privileges allow and logs one line
// saying what and why not the rest; on fails the start unless everything
// attached; off attaches nothing.

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"ustore/ebpf"
	"ustore/trace"
)

// eBPF modes.
const (
	ebpfAuto = "auto"
	ebpfOn   = "on"
	ebpfOff  = "off"
)

func parseEBPFMode(s string) (string, error) {
	switch s {
	case ebpfAuto, ebpfOn, ebpfOff:
		return s, nil
	}
	return "", fmt.Errorf("--ebpf %q: want auto, on or off", s)
}

func parseEBPFFeatures(fs []string) error {
	for _, f := range fs {
		if !slices.Contains(ebpf.Features, f) {
			return fmt.Errorf("--ebpf-features: %q is not one of %s", f, strings.Join(ebpf.Features, ", "))
		}
	}
	return nil
}

// startEBPF attaches the probes as mode says and publishes them: their
// histograms on /metrics, their long lock waits as span events (span
// binding on). stop detaches everything; it is never nil.
func startEBPF(mode string, threshold time.Duration, features []string, log *slog.Logger) (stop func(), err error) {
	stop = func() {}
	if mode == ebpfOff || mode == "" { // "": a serveConfig built by a test, not by the flags
		log.Info("ebpf off", "why", "--ebpf off")
		return stop, nil
	}
	p, err := ebpf.Attach(ebpf.Config{WaitThreshold: threshold, Features: features, Log: log})
	if err != nil {
		if mode == ebpfOn {
			return stop, fmt.Errorf("--ebpf on: %w", err)
		}
		log.Warn("ebpf off", "why", oneLine(err))
		return stop, nil
	}
	if failed := p.Failed(); len(failed) > 0 && mode == ebpfOn {
		summary := p.Summary()
		p.Close()
		return stop, fmt.Errorf("--ebpf on: %s", summary)
	}
	c := ebpf.NewCollector(p)
	if err := trace.RegisterCollector(c); err != nil {
		p.Close()
		return stop, err
	}
	restore := trace.SetSpanBinding(true)
	if len(p.Failed()) > 0 {
		log.Warn("ebpf partly on", "summary", oneLine(errors.New(p.Summary())))
	} else {
		log.Info("ebpf on", "attached", strings.Join(p.Attached(), ","))
	}
	return func() {
		restore()
		trace.UnregisterCollector(c)
		start := time.Now()
		err := p.Close()
		log.Info("ebpf detached", "duration", time.Since(start), "err", err)
	}, nil
}

// oneLine keeps a joined error on one log line.
func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }
