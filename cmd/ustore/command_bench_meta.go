package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"ustore/bench/metabench"
	"ustore/bench/servicebench"
)

func newBenchMetaCommand() *cobra.Command {
	var (
		socket, dir, root, label, progress string
		clients                            []int
		files, bigDir, deletes, echoTrips  int
		echo, asJSON, keep                 bool
	)
	c := &cobra.Command{
		Use:   "meta",
		Short: "Metadata ops (create, stat, rename, unlink, mkdir, rmdir, readdir, deletes) at 1, 8 and 64 clients",
		Long: `Measure metadata operations at each client count (--clients): --files
creates of empty files in one directory shared by the clients (the count
split among them), a stat (lookup by name) of each, a rename of each
within the directory, an unlink of each, then --files mkdirs and rmdirs;
then each client reads the whole of a big directory of --big-dir entries
(readdir), and the clients delete --deletes of its files, spread through
it (different ones at each count). Every op is timed: ops/s, p50 and p99
per op.

The big directory is filled once, untimed, before the first count. The
issue's size is 1,000,000 entries (--big-dir 1000000): filling and emptying
it takes minutes, so the default is 100,000, and a default run takes under
two minutes on ustore and on ext4.

The echo reference (--echo, on by default): the echo process of 'bench
service' (this binary, 'bench echo-server', a process of its own), timed
with each op's request and response frame sizes at depth 1; at one client
the report gives each op's p50 in echo round trips.

The target is a running ustore server (--socket; by default $` + socketEnv + `,
else ustore-data/ustore.sock), one connection per client, or a directory
on a kernel filesystem (--dir), through the system calls (open with
O_CREAT|O_EXCL and close, stat, rename, unlink, mkdir, rmdir, getdents).
Both run the same workload code: bench/meta-vs-ext4.sh runs it on 'ustore
serve' and on ext4 on a loop device, alternately. The workload makes a
directory of its own under the target (--root on a server) and removes it
at the end; with --keep the big directory is left.`,
		Example: `  ustore bench meta
  ustore bench meta --dir /mnt/ext4 --label ext4 --json
  ustore bench meta --clients 1 --files 20000 --big-dir 1000000`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// A zero in the configuration is its default: here it is a
			// mistake.
			for _, v := range []struct {
				name string
				n    int
			}{{"files", files}, {"big-dir", bigDir}, {"deletes", deletes}, {"echo-round-trips", echoTrips}} {
				if v.n < 1 {
					return usageError{fmt.Errorf("--%s %d: want at least 1", v.name, v.n)}
				}
			}
			cfg := metabench.Config{Clients: clients, Files: files, BigDir: bigDir, Deletes: deletes,
				EchoRoundTrips: echoTrips, Keep: keep}
			if err := cfg.Validate(); err != nil {
				return usageError{fmt.Errorf("meta: %w", err)}
			}
			var t metabench.Target
			if dir != "" {
				if cmd.Flags().Changed("socket") || cmd.Flags().Changed("root") {
					return usageError{fmt.Errorf("--dir runs on a kernel filesystem: --socket and --root are for a server")}
				}
				d, err := metabench.NewDir(dir)
				if err != nil {
					return usageError{fmt.Errorf("--dir: %w", err)}
				}
				t = d
			} else {
				t = metabench.NewUstore(socket, root)
			}
			stderr := cmd.ErrOrStderr()
			if showProgress(progress, stderr) {
				cfg.Phase = func(s string) { fmt.Fprintf(stderr, "\r\033[K%s\n", s) }
				cfg.Progress = func(p metabench.Progress) {
					r := p.Result
					fmt.Fprintf(stderr, "\r\033[K[%d/%d] %-7s %2d clients %8.0f ops/s p50 %.1f µs", p.Step, p.Steps, r.Op,
						r.Clients, r.OpsPerSec, r.P50US)
				}
			}
			if echo {
				e, err := startMetaEcho()
				if err != nil {
					return err
				}
				defer e.stop()
				cfg.Echo = e.p
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
			defer stop()
			rep, runErr := metabench.Run(ctx, t, cfg)
			if cfg.Progress != nil {
				fmt.Fprint(stderr, "\r\033[K")
			}
			// What finished is printed even after a failure.
			if rep != nil && len(rep.Results) > 0 {
				rep.Stamp(label)
				if err := writeResults(cmd.OutOrStdout(), asJSON, rep, func(w io.Writer) { metabench.WriteText(w, rep) }); err != nil {
					return err
				}
			}
			return runErr
		},
	}
	f := c.Flags()
	f.StringVar(&socket, "socket", defaultClientSocket(), "the running server's Unix socket")
	f.StringVar(&dir, "dir", "", "run on this directory of a kernel filesystem instead of a server")
	f.StringVar(&root, "root", "/", "on a server: the directory to work under")
	f.IntSliceVar(&clients, "clients", []int{1, 8, 64}, "client counts (connections on a server, goroutines on a directory)")
	f.IntVar(&files, "files", 10_000, "creates (and stats, renames, unlinks, mkdirs, rmdirs) per client count")
	f.IntVar(&bigDir, "big-dir", 100_000, "entries of the big directory that readdir reads and the deletes are made in (the issue's: 1000000)")
	f.IntVar(&deletes, "deletes", 1000, "deletes in the big directory per client count")
	f.BoolVar(&echo, "echo", true, "time the echo reference (a process of its own) with each op's frame sizes")
	f.IntVar(&echoTrips, "echo-round-trips", 2000, "echo round trips per op")
	f.StringVar(&label, "label", "", "a name for the target in the report (such as ext4)")
	f.BoolVar(&keep, "keep", false, "leave the big directory on the target")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.StringVar(&progress, "progress", "auto", "show progress on stderr: auto (when a terminal), always, never")
	return c
}

// metaEcho is bench meta's echo process and the directory of its socket.
type metaEcho struct {
	p   *servicebench.EchoProcess
	dir string
}

// startMetaEcho starts this binary's 'bench echo-server' on a socket in a
// directory of its own.
func startMetaEcho() (*metaEcho, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("the echo process: %w", err)
	}
	dir, err := os.MkdirTemp("", "ustore-bench-meta-")
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, "echo.sock")
	p, err := servicebench.StartEchoProcess(exec.Command(self, "bench", "echo-server", "--socket", sock), sock)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &metaEcho{p: p, dir: dir}, nil
}

func (e *metaEcho) stop() error { return errors.Join(e.p.Stop(), os.RemoveAll(e.dir)) }
