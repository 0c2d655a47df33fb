package trace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/resource"
)

// Histogram buckets are powers of two, so that a Go-side histogram and a
// BPF-side log2 histogram (bucket k counts values in [2^k, 2^(k+1))) line
// up bucket for bucket: the Go side's boundary 2^(k+1) closes BPF's bucket k.
// (Prometheus buckets include their upper bound, BPF's exclude it: a value
// of exactly 2^(k+1) lands one bucket apart. Nothing else differs.)
const (
	// DurationBucketMinLog2 and DurationBucketMaxLog2 bound the duration
	// histograms' boundaries: 2^8 ns (256 ns, below any blocking wait) to
	// 2^35 ns (34 s, beyond any sane commit), in seconds.
	DurationBucketMinLog2 = 8
	DurationBucketMaxLog2 = 35
	// CountBucketMaxLog2 bounds the count histograms' boundaries: 1 to
	// 2^12 (4096, more SQEs than a ring holds).
	CountBucketMaxLog2 = 12
)

// DurationBounds returns the duration histograms' boundaries in seconds:
// 2^k ns for k in [DurationBucketMinLog2, DurationBucketMaxLog2].
func DurationBounds() []float64 {
	b := make([]float64, 0, DurationBucketMaxLog2-DurationBucketMinLog2+1)
	for k := DurationBucketMinLog2; k <= DurationBucketMaxLog2; k++ {
		b = append(b, float64(uint64(1)<<k)/1e9)
	}
	return b
}

// CountBounds returns the count histograms' boundaries: 2^k for k in
// [0, CountBucketMaxLog2].
func CountBounds() []float64 {
	b := make([]float64, 0, CountBucketMaxLog2+1)
	for k := 0; k <= CountBucketMaxLog2; k++ {
		b = append(b, float64(uint64(1)<<k))
	}
	return b
}

// instruments are the histograms the Record functions feed. Its fields are
// set once, before it is published in meters, and never written again.
type instruments struct {
	request     metric.Float64Histogram // by op and status
	fsync       metric.Float64Histogram
	logSync     metric.Float64Histogram
	commit      metric.Float64Histogram
	commitPhase metric.Float64Histogram // by phase
	lockWait    metric.Float64Histogram // by tree and level
	ringBatch   metric.Int64Histogram
	logBatch    metric.Int64Histogram

	byOp    optionCache[opStatus]
	byPhase optionCache[string]
	byLock  optionCache[lockKey]
}

// opStatus labels a request: its op and how it ended ("ok", or the
// errno's name).
type opStatus struct {
	op, status string
}

type lockKey struct {
	tree  string
	level int
}

// meters is nil while metrics are off: a Record function then costs one
// atomic load.
var meters atomic.Pointer[instruments]

// registry is the Prometheus registry /metrics serves, nil while metrics
// are off.
var registry atomic.Pointer[prometheus.Registry]

// metricsAddr is the address /metrics is served on (tests read it when they
// asked for port 0).
var metricsAddr atomic.Pointer[string]

// RecordRequest records the latency of one request of operation op that
// ended with status: "ok", or the errno's name ("ENOENT"), so that a
// dashboard can tell failed requests from served ones. Statuses are a
// closed set (the protocol's), so the label stays bounded.
func RecordRequest(op, status string, d time.Duration) {
	if m := meters.Load(); m != nil {
		m.request.Record(context.Background(), d.Seconds(), m.byOp.get(opStatus{op, status})...)
	}
}

// RecordFsync records the latency of one fsync, whichever way it went
// (already durable, log sync, or transaction commit).
func RecordFsync(d time.Duration) {
	if m := meters.Load(); m != nil {
		m.fsync.Record(context.Background(), d.Seconds())
	}
}

// RecordLogSync records the latency of one log sync (writing and flushing a
// log transaction for all the contexts that joined it) and, from its
// committer (batch > 0), how many contexts it completed: the group-commit
// batch.
func RecordLogSync(d time.Duration, batch int) {
	if m := meters.Load(); m != nil {
		m.logSync.Record(context.Background(), d.Seconds())
		if batch > 0 {
			m.logBatch.Record(context.Background(), int64(batch))
		}
	}
}

// RecordCommit records the latency of one transaction commit, start to
// superblock flushed.
func RecordCommit(d time.Duration) {
	if m := meters.Load(); m != nil {
		m.commit.Record(context.Background(), d.Seconds())
	}
}

// RecordCommitPhase records the latency of one phase of a commit
// ("update_roots", "write_nodes", "flush", "super").
func RecordCommitPhase(phase string, d time.Duration) {
	if m := meters.Load(); m != nil {
		m.commitPhase.Record(context.Background(), d.Seconds(), m.byPhase.get(phase)...)
	}
}

// RecordLockWait records one contended acquisition of a tree lock at level
// (0: leaves) that waited d.
func RecordLockWait(tree string, level int, d time.Duration) {
	if m := meters.Load(); m != nil {
		m.lockWait.Record(context.Background(), d.Seconds(), m.byLock.get(lockKey{tree, level})...)
	}
}

// RecordRingBatch records the number of SQEs one ring submission carried.
func RecordRingBatch(sqes int) {
	if m := meters.Load(); m != nil {
		m.ringBatch.Record(context.Background(), int64(sqes))
	}
}

// RegisterCollector adds c to the registry /metrics serves: the eBPF bridge
// publishes its log2 histograms this way (prometheus.MustNewConstHistogram
// at scrape time, with DurationBounds). Call it after Setup; while metrics
// are off it does nothing and returns nil.
func RegisterCollector(c prometheus.Collector) error {
	reg := registry.Load()
	if reg == nil {
		return nil
	}
	if err := reg.Register(c); err != nil {
		return fmt.Errorf("trace: register collector: %w", err)
	}
	return nil
}

// UnregisterCollector removes a collector RegisterCollector added, so that
// a detached eBPF bridge leaves no series behind. It reports whether c was
// registered.
func UnregisterCollector(c prometheus.Collector) bool {
	reg := registry.Load()
	return reg != nil && reg.Unregister(c)
}

// startMetrics builds the meter provider and its Prometheus exporter on a
// registry of its own (not the client library's global one, which a
// second Setup would collide with), serves it on addr, and makes the Record
// functions use it.
func startMetrics(res *resource.Resource, addr string, profiling bool, log *slog.Logger) (stop func(context.Context) error, bound string, err error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// WithoutScopeInfo: no otel_scope_* labels, so that the Go-side series
	// carry the same labels as the BPF bridge's const histograms.
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, "", fmt.Errorf("trace: prometheus exporter: %w", err)
	}
	// No exemplars: the Record functions have no span in their context
	// (context.Background), so the default trace-based filter never kept
	// one, yet every measurement paid for its offer to the reservoir.
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithResource(res),
		sdkmetric.WithExemplarFilter(exemplar.AlwaysOffFilter))
	ins, err := newInstruments(mp.Meter(instrumentationName))
	if err != nil {
		_ = mp.Shutdown(context.Background())
		return nil, "", err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_ = mp.Shutdown(context.Background())
		return nil, "", fmt.Errorf("trace: metrics listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	if profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error("trace: metrics server stopped", "err", err)
		}
	}()
	bound = ln.Addr().String()
	metricsAddr.Store(&bound)
	registry.Store(reg)
	meters.Store(ins)

	return func(ctx context.Context) error {
		meters.Store(nil)
		registry.Store(nil)
		metricsAddr.Store(nil)
		err := srv.Shutdown(ctx)
		if err != nil {
			err = errors.Join(err, srv.Close())
		}
		<-served
		if e := mp.Shutdown(ctx); e != nil {
			err = errors.Join(err, fmt.Errorf("trace: meter provider shutdown: %w", e))
		}
		return err
	}, bound, nil
}

// newInstruments creates the histograms. Names follow OpenTelemetry's
// conventions; the Prometheus exporter turns "ustore.commit.duration" with
// unit "s" into ustore_commit_duration_seconds.
func newInstruments(m metric.Meter) (*instruments, error) {
	var errs []error
	dur := func(name, desc string) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(DurationBounds()...))
		errs = append(errs, err)
		return h
	}
	ins := &instruments{
		request:     dur("ustore.request.duration", "Latency of requests, by op and status."),
		fsync:       dur("ustore.fsync.duration", "Latency of fsync requests."),
		logSync:     dur("ustore.log_sync.duration", "Latency of log syncs."),
		commit:      dur("ustore.commit.duration", "Latency of transaction commits."),
		commitPhase: dur("ustore.commit.phase.duration", "Latency of transaction commit phases, by phase."),
		lockWait:    dur("ustore.lock.wait.duration", "Waits of contended tree locks, by tree and level."),
	}
	var err error
	ins.ringBatch, err = m.Int64Histogram("ustore.ring.batch.size", metric.WithUnit("{sqe}"),
		metric.WithDescription("SQEs per ring submission."),
		metric.WithExplicitBucketBoundaries(CountBounds()...))
	errs = append(errs, err)
	ins.logBatch, err = m.Int64Histogram("ustore.log_sync.batch.size", metric.WithUnit("{context}"),
		metric.WithDescription("Fsync contexts completed per log sync (the group-commit batch)."),
		metric.WithExplicitBucketBoundaries(CountBounds()...))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("trace: instruments: %w", err)
	}
	ins.byOp.attrs = func(k opStatus) attribute.Set {
		return attribute.NewSet(attribute.String("op", k.op), attribute.String("status", k.status))
	}
	ins.byPhase.attrs = func(p string) attribute.Set { return attribute.NewSet(attribute.String("phase", p)) }
	ins.byLock.attrs = func(k lockKey) attribute.Set {
		return attribute.NewSet(attribute.String("tree", k.tree), attribute.String("level", strconv.Itoa(k.level)))
	}
	return ins, nil
}

// optionCacheMax bounds an optionCache: label values come from code (op
// names and statuses, trees, levels), a few dozen to a few hundred (the op
// × status pairs that occur); past the bound, options are built per call
// (an allocation, never unbounded memory).
const optionCacheMax = 1024

// optionCache maps a label value to the record options that carry it, built
// once: building an attribute set allocates, looking one up here does not.
// Reads load an immutable map; a miss copies it under mu (copy-on-write),
// which happens once per label value.
type optionCache[K comparable] struct {
	attrs func(K) attribute.Set // set before the cache is published

	mu sync.Mutex
	m  atomic.Pointer[map[K][]metric.RecordOption]
}

func (c *optionCache[K]) get(k K) []metric.RecordOption {
	if m := c.m.Load(); m != nil {
		if o, ok := (*m)[k]; ok {
			return o
		}
	}
	return c.add(k)
}

func (c *optionCache[K]) add(k K) []metric.RecordOption {
	o := []metric.RecordOption{metric.WithAttributeSet(c.attrs(k))}
	c.mu.Lock()
	defer c.mu.Unlock()
	var m map[K][]metric.RecordOption
	if old := c.m.Load(); old != nil {
		if o, ok := (*old)[k]; ok {
			return o // added since get looked
		}
		if len(*old) >= optionCacheMax {
			return o
		}
		m = maps.Clone(*old)
	} else {
		m = make(map[K][]metric.RecordOption)
	}
	m[k] = o
	c.m.Store(&m)
	return o
}
