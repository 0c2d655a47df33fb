package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"ustore/bench/servicebench"
	"ustore/dev/devopen"
)

func newBenchServiceCommand() *cobra.Command {
	var (
		socket, file, size, bs, fileSize, backend string
		ops, systems                              []string
		clients, depths                           []int
		duration, warmup                          time.Duration
		memdev, asJSON, inProcess                 bool
		seed                                      uint64
		cpuProfile, progress                      string
	)
	c := &cobra.Command{
		Use:   "service",
		Short: "Measure the service: ops/s and latency through the client, the protocol and the server",
		Long: `Measure the whole service — client, protocol over a Unix socket, server,
store — with 4 KiB writes, 4 KiB reads and stats, for each number of clients
(connections) and pipelining depth (requests each client keeps in flight),
and report ops/s and p50/p99/p99.9 latency per cell.

In the same run, each cell is also measured on two references:
  store   the same op called directly on the same store, in this process,
          by clients×depth goroutines: what the store itself costs (only
          with --in-process or --memdev)
  echo    a plain Unix-socket echo server answering requests of the op's
          request-frame size with the op's response-frame size: the floor
          a socket round trip sets (at depth 1 its client reads on the
          caller's goroutine; deeper, a reader goroutine hands responses
          back, as the real client does). It runs in a process of its own,
          as the server does, unless --in-process or --memdev
and at depth 1 the service's median round trip is compared with the echo's:
the goal is that the service adds at most 2 echo round trips beyond the
store's own time.

The server: by default 'ustore serve --ebpf off' (this binary) in a process
of its own, as users run it, on --file (created and laid out to --size,
written in full with O_DIRECT, then formatted: its contents are lost);
between two processes a request pays thread wake-ups that one process
hides. With --in-process, a server in this process on --file, and with
--memdev one in this process on an in-memory device (both as before, with
the store reference). Or an external server with --socket (the run's files
go in a directory of its own, removed at the end). With the server in
another process the store reference is skipped. Each client has its own --file-size file, written and synced
before the first cell, so reads reach the device. Writes are synced after
each write cell (untimed).

Cells run for --duration each after a short warm-up; the defaults (3 ops ×
3 client counts × 2 depths × 3 systems × 2 s) take about two minutes.`,
		Example: `  ustore bench service
  ustore bench service --op stat --clients 1 --depth 1 --duration 5s
  ustore bench service --socket ustore-data/ustore.sock --systems service,echo --json
  ustore bench service --memdev --duration 500ms
  ustore bench service --in-process --op stat --clients 1 --depth 1`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var sz, b, fsz int64
			if err := parseSizeFlags(sizeFlag{"size", size, &sz}, sizeFlag{"bs", bs, &b}, sizeFlag{"file-size", fileSize, &fsz}); err != nil {
				return err
			}
			be, err := devopen.ParseBackend(backend)
			if err != nil {
				return usageError{err}
			}
			if duration <= 0 {
				return usageError{fmt.Errorf("--duration %v: want more than 0", duration)}
			}
			cfg := servicebench.Config{
				Socket: socket, File: file, Memdev: memdev, InProcess: inProcess, Size: sz, Backend: be,
				Ops: ops, Systems: systems, Clients: clients, Depths: depths,
				Duration: duration, Warmup: warmup, BS: int(b), FileSize: fsz, Seed: seed,
				Logger: quietLogger(),
			}
			if cmd.Flags().Changed("socket") && (cmd.Flags().Changed("file") || memdev) {
				return usageError{fmt.Errorf("--socket drives an external server: --file and --memdev are for a server of the run's own")}
			}
			if cmd.Flags().Changed("socket") && inProcess {
				return usageError{fmt.Errorf("--socket drives an external server: --in-process is for a server of the run's own")}
			}
			if !memdev && !inProcess && socket == "" {
				self, err := os.Executable()
				if err != nil {
					return fmt.Errorf("the server process: %w", err)
				}
				cfg.ServerProcess = func(device, sock string) *exec.Cmd {
					return exec.Command(self, "serve", "--device", device, "--socket", sock, "--backend", backend,
						"--ebpf", "off", "--log-level", "warn")
				}
				cfg.EchoProcess = func(sock string) *exec.Cmd {
					return exec.Command(self, "bench", "echo-server", "--socket", sock)
				}
			}
			if err := cfg.Validate(); err != nil {
				return usageError{fmt.Errorf("servicebench: %w", err)}
			}
			stderr := cmd.ErrOrStderr()
			if showProgress(progress, stderr) {
				cfg.Phase = func(s string) { fmt.Fprintf(stderr, "\r\033[K%s\n", s) }
				cfg.Progress = func(p servicebench.Progress) {
					rate := 0.0
					if p.Elapsed > 0 {
						rate = float64(p.Ops) / p.Elapsed.Seconds()
					}
					fmt.Fprintf(stderr, "\r\033[K%s", benchStep(p.Cell, p.Cells, p.Elapsed, p.Duration,
						fmt.Sprintf("%-7s %-5s %3d clients × depth %-3d %4.1fs/%.1fs %9.0f ops/s",
							p.System, p.Op, p.Clients, p.Depth, p.Elapsed.Seconds(), p.Duration.Seconds(), rate)))
				}
			}
			stopProfile, err := startCPUProfile(cpuProfile)
			if err != nil {
				return err
			}
			defer stopProfile()
			rep, runErr := servicebench.Run(cfg)
			if cfg.Progress != nil {
				fmt.Fprint(stderr, "\r\033[K")
			}
			// What finished is printed even when a later cell failed.
			if rep != nil && len(rep.Results) > 0 {
				if err := writeResults(cmd.OutOrStdout(), asJSON, rep, func(w io.Writer) { servicebench.WriteText(w, rep) }); err != nil {
					return err
				}
			}
			return runErr
		},
	}
	f := c.Flags()
	f.StringVar(&socket, "socket", "", "drive the external server on this socket instead of starting one")
	f.StringVar(&file, "file", "ustore-data/bench-service.img", "device file of the server the run starts (laid out and formatted: its contents are lost)")
	f.StringVar(&size, "size", "1G", "size of --file (or of --memdev)")
	f.BoolVar(&memdev, "memdev", false, "run the server in this process on an in-memory device instead of --file (it keeps each cell's writes: the default matrix peaks near 3.5 GB)")
	f.BoolVar(&inProcess, "in-process", false, "run the server (and the echo reference) in this process instead of as processes of their own")
	f.StringVar(&backend, "backend", "auto", "I/O backend of --file: auto, io_uring, syscall")
	f.StringSliceVar(&ops, "op", servicebench.Ops, "ops: read, stat, write (run in this order)")
	f.StringSliceVar(&systems, "systems", servicebench.Systems, "systems: service, store (in-process reference), echo (the floor)")
	f.IntSliceVar(&clients, "clients", []int{1, 8, 64}, "client counts (connections)")
	f.IntSliceVar(&depths, "depth", []int{1, 16}, "requests each client keeps in flight")
	f.DurationVar(&duration, "duration", 2*time.Second, "measured time per cell")
	f.DurationVar(&warmup, "warmup", 0, "untimed warm-up per cell (0: a tenth of --duration, at most 200ms)")
	f.StringVar(&bs, "bs", "4k", "bytes per write and read")
	f.StringVar(&fileSize, "file-size", "4M", "size of each client's file")
	f.Uint64Var(&seed, "seed", 1, "seed of the offsets and the data")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	f.StringVar(&progress, "progress", "auto", "show progress on stderr: auto (when a terminal), always, never")
	return c
}

// newBenchEchoServerCommand is the echo reference's process, which `bench
// service` starts beside the server's: hidden, since it is the benchmark's
// own part.
func newBenchEchoServerCommand() *cobra.Command {
	var socket string
	c := &cobra.Command{
		Use:    "echo-server",
		Short:  "Serve bench service's echo reference on a Unix socket until SIGTERM",
		Hidden: true,
		Args:   noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if socket == "" {
				return usageError{fmt.Errorf("--socket: give the path to listen on")}
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			return servicebench.ServeEcho(ctx, socket)
		},
	}
	c.Flags().StringVar(&socket, "socket", "", "the socket path to listen on")
	return c
}
