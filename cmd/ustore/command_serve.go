package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"ustore/dev/devopen"
	"ustore/engine"
	"ustore/journal"
	"ustore/server"
	"ustore/store"
	"ustore/trace"
)

// serveConfig is everything `ustore serve` runs with, parsed from its flags.
type serveConfig struct {
	Device          string
	Size            int64 // of a data file serve creates or formats
	Backend         devopen.Backend
	Socket          string
	SocketMode      os.FileMode
	SocketGroup     string
	AllowUIDs       []uint32 // nil: the server's default (its own uid and root)
	AllowGIDs       []uint32
	CacheBytes      int64
	DirtyBytes      int64
	CommitInterval  time.Duration
	ShutdownTimeout time.Duration
	// The service's bounds (server.Options): bytes in flight, connections,
	// deadlines.
	InflightBytes  int64
	ConnMax        int
	ConnPerUID     int
	ConnReserved   int
	HandlesPerConn int
	AdminUIDs      []uint32 // nil: the server's default (root and its own uid)
	IdleTimeout    time.Duration
	FrameTimeout   time.Duration
	WriteTimeout   time.Duration
	LogLevel       slog.Level
	// Tracing and metrics endpoints, kept for the tracing setup: OTLP
	// traces to OTLPEndpoint, a Prometheus scrape endpoint on MetricsAddr.
	OTLPEndpoint string
	// SampleRatio is --trace-sample-ratio when given (nil: the
	// environment's OTEL_TRACES_SAMPLER, else trace.DefaultSampling).
	SampleRatio *float64
	MetricsAddr string
	Pprof       bool // Go's profiles under /debug/pprof/ on MetricsAddr
	// Ablations are the benchmarks' switches (journal.Ablations), set by
	// the hidden --ablate-* flags (addAblationFlags).
	Ablations journal.Ablations
	// ReadOnly serves a damaged device without writing to it
	// (command_serve_readonly.go); SkipLogReplay, with it, serves the last
	// commit of a device with an fsync log that cannot be replayed.
	ReadOnly, SkipLogReplay bool
	// AllowReadableDevice starts serve on a data file others can read or
	// write, with a warning, instead of refusing (checkDataFileMode).
	AllowReadableDevice bool
	// EBPF is --ebpf (auto, on, off); EBPFThreshold the lock wait from
	// which a wait becomes a span event.
	EBPF          string
	EBPFThreshold time.Duration
	EBPFFeatures  []string // nil: all
}

func newServeCommand() *cobra.Command {
	var (
		cfg                              serveConfig
		size, cacheSize, dirtySize, mode string
		backend, logLevel                string
		sampleRatio                      float64
		allowUIDs, allowGIDs             []string
		commitInterval, shutdownTimeout  time.Duration
		inflightSize                     string
		adminUIDs                        []string
	)
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run the ustore service on a device, over a Unix socket",
		Long: `Run the ustore service: mount the filesystem on the device and serve it over
a Unix socket until SIGTERM or SIGINT.

With no flags it keeps everything in ./ustore-data: the data file
ustore-data/ustore.img and the socket ustore-data/ustore.sock next to it.

The data file (--device):
  missing                      created (--size, its space allocated) and formatted
  a regular file of zeros      (holes or zero bytes, or empty) formatted in place
  a ustore filesystem          mounted; it is never reformatted
  anything else                refused: format it with 'ustore mkfs' first
A block device is never formatted by serve. One server per device: serve
takes an exclusive lock (flock) on it and refuses to start if another holds it.
A data file serve creates is mode 0600. An existing one that others can read
or write (a regular file with any group or other rw bit; a block device with
an other rw bit — its group, usually disk, is trusted) is refused: those
users would read every stored file around the socket's peer check. Run
'chmod 600 FILE', or pass --allow-readable-device to serve it with a warning.
The socket path is checked before a data file is created or formatted.

The socket (--socket, default <device's directory>/<device's name>.sock) is
created only once the filesystem is mounted, with --socket-mode and
--socket-group. A stale socket left by a dead server is replaced; a live one,
or a file that is not a socket, is an error. Each client's credentials
(SO_PEERCRED) must match --allow-uid or --allow-gid (default: the server's own
uid and root); others are refused with EACCES. When $NOTIFY_SOCKET is set
(systemd Type=notify), serve sends READY=1 once the socket is listening.

Bounds, so that no client can take the service down (docs/design/service.md):
  --inflight-size   bytes of requests and responses in flight, all connections
                    together; past it the server stops reading requests until
                    responses have gone out. Memory for requests stays under it.
  --conn-max        connections at once; --conn-reserved of them only for
                    --admin-uid (default root and the server's uid), so an
                    administrator can always connect; any other user has at
                    most --conn-per-uid (then EBUSY at the hello).
  --handles-per-conn
                    files one connection holds open (a FUSE mount: the files
                    its programs have open); past it open is EMFILE. A
                    connection's handles are released when it ends, and it is
                    never closed as idle while it holds any.
  --idle-timeout    closes a connection with nothing in flight that sends
                    nothing (0: never); --frame-timeout bounds the reading of a
                    request that has started; --write-timeout closes a client
                    that does not read its responses (so it cannot hold the
                    shutdown).

SIGTERM or SIGINT shuts down gracefully: no new connections, the requests
already received finish and are answered, then the filesystem is unmounted
(dirty data written back and committed), and serve exits 0. Everything
answered before is then on disk. A second signal, or --shutdown-timeout,
cancels the requests still running (the unmount still completes).

--read-only is for a damaged device, so that users can copy out what is
intact: it mounts without reading what only writers need (the free space
tree, the highest inode number, a directory's next index), so one damaged
node there no longer makes the device unmountable; a request that reads
through a damaged node fails with EIO, that request only. Every change
fails with EROFS and nothing is ever written to the device (no commit, no
log replay): the data file is never created or formatted. If the device
holds an fsync log to replay, serve refuses and says so: run 'ustore fsck'
(which replays it) or serve it read-write once first; if that replay fails
on the damaged tree, --skip-log-replay serves the last commit without the
log, so without the files fsynced after it (a warning says so).

` + serveEnvHelp,
		Example: `  ustore serve                                  # ./ustore-data/ustore.img, 1 GiB
  ustore serve --device /srv/ustore.img --size 64G --socket /run/ustore.sock \
               --socket-group ustore --allow-gid ustore`,
		Args: noArgs,
		RunE: withFlagEnv(func(cmd *cobra.Command, args []string) error {
			var err error
			parse := func(flag, v string) int64 {
				n, perr := parseBytes(v)
				if perr != nil && err == nil {
					err = usageError{fmt.Errorf("--%s: %w", flag, perr)}
				}
				return n
			}
			if cmd.Flags().Changed("trace-sample-ratio") {
				cfg.SampleRatio = &sampleRatio
			}
			cfg.Size = parse("size", size)
			if cacheSize != "auto" {
				cfg.CacheBytes = parse("cache-size", cacheSize)
			}
			cfg.DirtyBytes = parse("dirty-size", dirtySize)
			cfg.InflightBytes = parse("inflight-size", inflightSize)
			if err != nil {
				return err
			}
			if cfg.Backend, err = devopen.ParseBackend(backend); err != nil {
				return usageError{err}
			}
			m, err := strconv.ParseUint(mode, 8, 32)
			if err != nil || m > 0o777 {
				return usageError{fmt.Errorf("--socket-mode %q: want octal permission bits, such as 0660", mode)}
			}
			cfg.SocketMode = os.FileMode(m)
			if cfg.AllowUIDs, err = parseIDs(allowUIDs, server.LookupUser); err != nil {
				return usageError{fmt.Errorf("--allow-uid: %w", err)}
			}
			if cfg.AllowGIDs, err = parseIDs(allowGIDs, server.LookupGroup); err != nil {
				return usageError{fmt.Errorf("--allow-gid: %w", err)}
			}
			if cfg.AdminUIDs, err = parseIDs(adminUIDs, server.LookupUser); err != nil {
				return usageError{fmt.Errorf("--admin-uid: %w", err)}
			}
			if cfg.ConnMax < 1 || cfg.ConnPerUID < 1 || cfg.ConnReserved < 1 || cfg.ConnReserved >= cfg.ConnMax {
				return usageError{errors.New("--conn-max, --conn-per-uid and --conn-reserved must be ≥ 1, and --conn-reserved less than --conn-max")}
			}
			if cfg.HandlesPerConn < 1 {
				return usageError{errors.New("--handles-per-conn must be ≥ 1")}
			}
			if cfg.IdleTimeout < 0 || cfg.FrameTimeout <= 0 || cfg.WriteTimeout <= 0 {
				return usageError{errors.New("--idle-timeout must be ≥ 0, --frame-timeout and --write-timeout > 0")}
			}
			if err := cfg.LogLevel.UnmarshalText([]byte(logLevel)); err != nil {
				return usageError{fmt.Errorf("--log-level: %w", err)}
			}
			if cfg.EBPF, err = parseEBPFMode(cfg.EBPF); err != nil {
				return usageError{err}
			}
			if err := parseEBPFFeatures(cfg.EBPFFeatures); err != nil {
				return usageError{err}
			}
			if cfg.SkipLogReplay && !cfg.ReadOnly {
				return usageError{errors.New("--skip-log-replay needs --read-only: a read-write mount must replay the fsync log")}
			}
			if commitInterval < 0 || shutdownTimeout <= 0 {
				return usageError{errors.New("--commit-interval must be ≥ 0 and --shutdown-timeout > 0")}
			}
			cfg.CommitInterval, cfg.ShutdownTimeout = commitInterval, shutdownTimeout
			if cfg.Socket == "" {
				cfg.Socket = defaultSocket(cfg.Device)
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: cfg.LogLevel}))
			sigs := make(chan os.Signal, 2)
			signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
			defer signal.Stop(sigs)
			return runServe(cfg, log, sigs)
		}),
	}
	f := c.Flags()
	f.StringVar(&cfg.Device, "device", defaultDevice, "data file or block device")
	f.StringVar(&size, "size", "1G", "size of a data file serve creates or formats")
	f.StringVar(&backend, "backend", "auto", "I/O backend: auto, io_uring, syscall")
	f.BoolVar(&cfg.AllowReadableDevice, "allow-readable-device", false, "serve a data file that users other than its owner can read or write (warns instead of refusing)")
	f.StringVar(&cfg.Socket, "socket", "", "Unix socket path (default next to the device: <dir>/<name>.sock)")
	f.StringVar(&mode, "socket-mode", "0660", "socket file permissions (octal)")
	f.StringVar(&cfg.SocketGroup, "socket-group", "", "socket file group, a name or gid (default the server's)")
	f.StringSliceVar(&allowUIDs, "allow-uid", nil, "users allowed to connect, names or uids (default: the server's own uid and root)")
	f.StringSliceVar(&allowGIDs, "allow-gid", nil, "groups allowed to connect (a peer's primary or supplementary group), names or gids")
	f.StringVar(&cacheSize, "cache-size", "auto", "memory for tree nodes, clean file data and in-memory inodes together, one budget (auto: a quarter of RAM, 64M to 4G)")
	f.StringVar(&dirtySize, "dirty-size", "256M", "buffered dirty data budget; writers wait for writeback past it")
	f.StringVar(&inflightSize, "inflight-size", "256M", "bytes of requests and responses in flight, all connections together; reading waits past it (at least 2M+16K)")
	f.IntVar(&cfg.ConnMax, "conn-max", 1024, "connections served at once")
	f.IntVar(&cfg.ConnPerUID, "conn-per-uid", 64, "connections of one user (not an --admin-uid); past it EBUSY at the hello")
	f.IntVar(&cfg.ConnReserved, "conn-reserved", 8, "of --conn-max, connections only --admin-uid users may take")
	f.IntVar(&cfg.HandlesPerConn, "handles-per-conn", 4096, "files one connection may hold open at once; past it open is EMFILE")
	f.StringSliceVar(&adminUIDs, "admin-uid", nil, "users who may take the reserved connections and are not limited per uid, names or uids (default: root and the server's own uid)")
	f.DurationVar(&cfg.IdleTimeout, "idle-timeout", 5*time.Minute, "close a connection with nothing in flight that sends nothing for this long (0: never)")
	f.DurationVar(&cfg.FrameTimeout, "frame-timeout", 10*time.Second, "a request that has started must arrive whole within this")
	f.DurationVar(&cfg.WriteTimeout, "write-timeout", 10*time.Second, "close a client that does not read its responses for this long")
	f.DurationVar(&commitInterval, "commit-interval", 5*time.Second, "periodic transaction commit interval")
	f.DurationVar(&shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long a graceful shutdown waits for the requests under way")
	f.StringVar(&cfg.OTLPEndpoint, "otlp-endpoint", "", "OTLP/HTTP endpoint for traces, such as localhost:4318 (default: $OTEL_EXPORTER_OTLP_ENDPOINT, or none)")
	f.Float64Var(&sampleRatio, "trace-sample-ratio", trace.DefaultSampleRatio, "fraction of new traces (requests without a traceparent) whose spans are exported; a traced client's requests follow its decision; without the flag $OTEL_TRACES_SAMPLER and _ARG decide")
	f.StringVar(&cfg.MetricsAddr, "metrics-addr", "", "address of a Prometheus metrics endpoint, such as :9464 (default none)")
	f.BoolVar(&cfg.Pprof, "pprof", false, "also serve Go's runtime profiles (CPU, heap, goroutines, mutex) under /debug/pprof/ on --metrics-addr")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.BoolVar(&cfg.ReadOnly, "read-only", false, "serve a damaged device for copying out: mount what is readable, refuse every change with EROFS, never write")
	f.BoolVar(&cfg.SkipLogReplay, "skip-log-replay", false, "with --read-only: serve the last commit of a device whose fsync log cannot be replayed, without the log's fsyncs")
	f.StringVar(&cfg.EBPF, "ebpf", ebpfAuto, "eBPF probes (lock waits, commit phases, io_uring, kernel locks): auto (attach what the kernel and privileges allow), on (fail unless all attach), off")
	f.DurationVar(&cfg.EBPFThreshold, "ebpf-wait-threshold", time.Millisecond, "lock waits at least this long become span events on the waiting request's span (with --ebpf)")
	f.StringSliceVar(&cfg.EBPFFeatures, "ebpf-features", nil, "attach only these eBPF features: markers, io_uring, kernel_locks, offcpu (default all)")
	addAblationFlags(c, &cfg.Ablations)
	return c
}

// ablationFlags are the --ablate-* flags of serve, one per field of
// journal.Ablations: the name, the field, what it switches off, and the
// warning serve logs when it is set.
var ablationFlags = []struct {
	name  string
	field func(*journal.Ablations) *bool
	usage string
	warn  string
}{
	{"ablate-log-leaf-search", func(a *journal.Ablations) *bool { return &a.LogInsertSearch },
		"for benchmarks only: fsync relogs an inode item with an inserting search (parent write locks) instead of a leaf-only one (ustore bench fsync-randwrite)",
		"ablation: fsync relogs inode items with an inserting search (--ablate-log-leaf-search, for benchmarks only)"},
	{"ablate-committed-lock", func(a *journal.Ablations) *bool { return &a.CommittedLocked },
		"for benchmarks only: fsync's committed check takes the journal's state lock instead of one atomic load (ustore bench committed-check)",
		"ablation: the committed check takes the journal's state lock (--ablate-committed-lock, for benchmarks only)"},
	{"ablate-teardown-per-range", func(a *journal.Ablations) *bool { return &a.TeardownPerRange },
		"for benchmarks only: truncate, deletion and unmount drop a file's cached blocks one by one over its size instead of all at once (bench/unmount.sh)",
		"ablation: cached file data is torn down block by block (--ablate-teardown-per-range, for benchmarks only)"},
	{"ablate-log-deltas", func(a *journal.Ablations) *bool { return &a.LogNodesEverySync },
		"for benchmarks only: every log sync writes the log tree's dirty nodes instead of a delta record of its changes when they fit (bench/fsync-vs-peers.sh)",
		"ablation: every log sync writes the log tree's nodes (--ablate-log-deltas, for benchmarks only)"},
}

// addAblationFlags defines the --ablate-* flags into a, hidden from
// `serve --help`: they are for the benchmark scripts in bench/, not for
// users, but stay settable.
func addAblationFlags(c *cobra.Command, a *journal.Ablations) {
	f := c.Flags()
	for _, af := range ablationFlags {
		f.BoolVar(af.field(a), af.name, false, af.usage)
		if err := f.MarkHidden(af.name); err != nil {
			panic(err) // the flag was defined on the line above
		}
	}
}

// warnAblations says aloud, once the store is mounted, every ablation that
// is set: a server running one is slower on purpose.
func warnAblations(log *slog.Logger, a journal.Ablations) {
	for _, af := range ablationFlags {
		if *af.field(&a) {
			log.Warn(af.warn)
		}
	}
}

// idleTimeout is --idle-timeout for server.Options: 0 (never) is negative
// there, where 0 means the default.
func idleTimeout(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// defaultSocket is the socket next to the device: ustore-data/ustore.img →
// ustore-data/ustore.sock.
func defaultSocket(device string) string {
	base := strings.TrimSuffix(filepath.Base(device), filepath.Ext(device))
	return filepath.Join(filepath.Dir(device), base+".sock")
}

// parseIDs turns names or numbers into ids; none gives nil.
func parseIDs(vals []string, lookup func(string) (uint32, error)) ([]uint32, error) {
	var ids []uint32
	for _, v := range vals {
		id, err := lookup(strings.TrimSpace(v))
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// runServe runs the service until a signal arrives on sigs, then shuts
// down gracefully. It returns nil after a clean shutdown.
func runServe(cfg serveConfig, log *slog.Logger, sigs <-chan os.Signal) (err error) {
	if fi, err := os.Stat(cfg.Device); err == nil && fi.Mode()&os.ModeDevice != 0 && cfg.Socket == defaultSocket(cfg.Device) {
		return usageError{fmt.Errorf("%s is a block device: give --socket", cfg.Device)}
	}
	shutdownTrace, err := trace.Setup(context.Background(), trace.Config{Endpoint: cfg.OTLPEndpoint, SampleRatio: cfg.SampleRatio, MetricsAddr: cfg.MetricsAddr, Profiling: cfg.Pprof, Logger: log})
	if err != nil {
		return usageError{fmt.Errorf("tracing: %w", err)}
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if terr := shutdownTrace(ctx); terr != nil {
			log.Warn("tracing shutdown", "err", terr)
		}
	}()
	stopEBPF, err := startEBPF(cfg.EBPF, cfg.EBPFThreshold, cfg.EBPFFeatures, log)
	if err != nil {
		return err
	}
	defer stopEBPF()
	lock, created, err := prepareDevice(cfg, log)
	if err != nil {
		return err
	}
	defer lock.Close()

	start := time.Now()
	open := openDevice
	if cfg.ReadOnly {
		open = openDeviceReadOnly
	}
	d, choice, formatted, err := open(cfg, log)
	if err != nil {
		return err
	}
	defer d.Close()
	st, err := store.Open(d, store.Options{CacheBytes: cfg.CacheBytes, DirtyBytes: cfg.DirtyBytes,
		CommitInterval: cfg.CommitInterval, Logger: log, Ablations: cfg.Ablations, ReadOnly: cfg.ReadOnly,
		SkipLogReplay: cfg.SkipLogReplay})
	if errors.Is(err, engine.ErrNotFormatted) {
		// One line: the four superblock copies' "bad magic" say nothing
		// more than "not a ustore filesystem" (fsck says it the same way).
		return &causeError{msg: fmt.Sprintf("%s is not a ustore filesystem (no superblock copy carries ustore's magic number) and is not blank: "+
			"serve does not format it; run 'ustore mkfs %s' to format it, destroying its contents", cfg.Device, cfg.Device), err: err}
	}
	if errors.Is(err, journal.ErrOptions) {
		return usageError{fmt.Errorf("--commit-interval: %w", err)}
	}
	if err != nil {
		return fmt.Errorf("mount %s: %w", cfg.Device, err)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		// The budgets bound what is live; the limit keeps the collector
		// from letting the heap grow to twice that (docs/design/store.md).
		debug.SetMemoryLimit(st.MemoryLimit())
	}
	mounted := time.Since(start)
	defer func() {
		cstart := time.Now()
		cerr := st.Close(context.Background())
		log.Info("unmounted", "device", cfg.Device, "duration", time.Since(cstart), "err", cerr)
		err = errors.Join(err, cerr)
	}()
	if err := registerStoreStats(st); err != nil {
		return err
	}
	warnAblations(log, cfg.Ablations)

	srv, err := server.New(st, server.Options{Socket: cfg.Socket, SocketMode: cfg.SocketMode, SocketGroup: cfg.SocketGroup,
		AllowUIDs: cfg.AllowUIDs, AllowGIDs: cfg.AllowGIDs, Logger: log,
		InflightBytesMax: cfg.InflightBytes, ConnMax: cfg.ConnMax, ConnPerUIDMax: cfg.ConnPerUID, ConnReserved: cfg.ConnReserved,
		HandlesPerConnMax: cfg.HandlesPerConn, AdminUIDs: cfg.AdminUIDs, IdleTimeout: idleTimeout(cfg.IdleTimeout), FrameTimeout: cfg.FrameTimeout, WriteTimeout: cfg.WriteTimeout})
	if err != nil {
		return err
	}
	// The endpoint spans really go to, wherever it came from (the flag or
	// OTEL_EXPORTER_OTLP_*), not the flag's value.
	otlpURL, otlpSource := trace.Exporting()
	log.Info("ustore serving", "device", cfg.Device, "bytes", d.Size(), "backend", choice.Backend, "backend_reason", choice.Reason,
		"formatted", created || formatted, "socket", cfg.Socket, "mount_duration", mounted,
		"tracing", trace.Enabled(), "otlp_endpoint", otlpURL, "otlp_endpoint_source", otlpSource,
		"trace_sampler", trace.ExportSampling().String(), "metrics_addr", cfg.MetricsAddr)
	if err := sdNotify("READY=1"); err != nil {
		log.Warn("sd_notify READY=1 failed", "err", err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background()) }()

	select {
	case sig := <-sigs:
		log.Info("signal received; shutting down", "signal", sig.String(), "timeout", cfg.ShutdownTimeout)
	case err := <-served:
		// Serve ends on its own only when accepting fails for good; it
		// has shut down already.
		return err
	}
	sdNotify("STOPPING=1")
	ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	go func() {
		select {
		case sig := <-sigs:
			log.Warn("second signal; cancelling the requests under way", "signal", sig.String())
			cancel()
		case <-ctx.Done():
		}
	}()
	sstart := time.Now()
	if err := srv.Shutdown(ctx); err != nil {
		log.Warn("shutdown forced", "err", err)
	}
	<-served
	log.Info("connections closed", "duration", time.Since(sstart))
	return nil
}
