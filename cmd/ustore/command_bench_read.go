package main

// `ustore bench seqread` and `ustore bench zipf`: reads through the client
// against a running server (bench/readbench).

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"ustore/bench/readbench"
	"ustore/client"
)

// benchDial connects to the server on socket, the context ending on
// SIGINT or SIGTERM.
func benchDial(socket string) (context.Context, *client.Client, func(), error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	c, err := client.Dial(dctx, socket)
	if err != nil {
		stop()
		return nil, nil, nil, fmt.Errorf("connect to %s: %w", socket, err)
	}
	return ctx, c, func() { c.Close(); stop() }, nil
}

func newBenchSeqReadCommand() *cobra.Command {
	var (
		socket, path, size string
		reps               int
		layoutOnly, asJSON bool
	)
	c := &cobra.Command{
		Use:   "seqread",
		Short: "Read one file front to back through the client: MB/s of a sequential reader",
		Long: `Read the file at --path on a running server front to back with the client's
Reader, whose pipeline keeps 8 reads of 1 MiB in flight, every 4 KiB block
checked against the offset stamped in it; --reps times, each timed from the
open to the last byte. The file is laid out first (--size bytes, stamped,
written through the client and made durable) unless it is there with that
size; --layout-only stops after that. Restart the server between layout and
reads for reads from the device: its page cache keeps what writeback wrote.
bench/seqread-vs-fio.sh runs it beside fio on the same disk.`,
		Example: `  ustore bench seqread --socket s.sock --size 4G --layout-only
  ustore bench seqread --socket s.sock --size 4G --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var sz int64
			if err := parseSizeFlags(sizeFlag{"size", size, &sz}); err != nil {
				return err
			}
			if sz <= 0 || reps < 1 {
				return usageError{fmt.Errorf("--size %d, --reps %d: want both positive", sz, reps)}
			}
			ctx, cl, done, err := benchDial(socket)
			if err != nil {
				return err
			}
			defer done()
			start := time.Now()
			wrote, err := readbench.LayOut(ctx, cl, path, sz, 1)
			if err != nil {
				return err
			}
			if wrote {
				fmt.Fprintf(cmd.ErrOrStderr(), "laid out %s: %d bytes in %v\n", path, sz, time.Since(start).Round(time.Millisecond))
			}
			if layoutOnly {
				return nil
			}
			var rs []readbench.SeqResult
			for range reps {
				r, err := readbench.SeqRead(ctx, cl, path)
				if err != nil {
					return err
				}
				rs = append(rs, r)
			}
			return writeResults(cmd.OutOrStdout(), asJSON, rs, func(w io.Writer) {
				for _, r := range rs {
					fmt.Fprintf(w, "seqread %s: %d bytes in %.3f s, %.1f MB/s\n", r.Path, r.Bytes, r.Seconds, r.MBps)
				}
			})
		},
	}
	f := c.Flags()
	f.StringVar(&socket, "socket", defaultClientSocket(), "the running server's Unix socket")
	f.StringVar(&path, "path", "/seqread.dat", "the file on the server")
	f.StringVar(&size, "size", "4G", "the file's size when it is laid out")
	f.IntVar(&reps, "reps", 1, "reads of the whole file")
	f.BoolVar(&layoutOnly, "layout-only", false, "lay the file out and stop")
	f.BoolVar(&asJSON, "json", false, "print the results as JSON")
	return c
}

func newBenchZipfCommand() *cobra.Command {
	var (
		socket, dir, data, metrics, csvPath string
		cfg                                 readbench.ZipfConfig
		layoutOnly, asJSON                  bool
	)
	c := &cobra.Command{
		Use:   "zipf",
		Short: "Zipf-distributed 4 KiB reads (and overwrites) over a data set larger than the cache, sampling its hit ratio and RSS",
		Long: `Run --workers goroutines, each one op at a time, for --duration: a 4 KiB
block drawn from a Zipf distribution (--s) over all blocks of --files files
of --data bytes in all (spread over the files by a fixed permutation), read
and checked, or for a --write-frac share of ops overwritten. Every
--interval it reads the server's /metrics (--metrics: serve's
--metrics-addr) and writes a CSV row to --csv: the page cache's hit ratio
over the interval and since the start, what the cache holds (file data,
tree nodes, its budget), dirty data, and the server's RSS.
bench/zipf-cache.sh runs it against a server with --cache-size a tenth of
--data and plots the CSV.

The files are laid out first (stamped, written through the client) unless
they are there with their size; --layout-only stops after that.`,
		Example: `  ustore bench zipf --socket s.sock --metrics 127.0.0.1:9464 --data 2560M --layout-only
  ustore bench zipf --socket s.sock --metrics 127.0.0.1:9464 --data 2560M --duration 60s --csv zipf.csv`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := parseSizeFlags(sizeFlag{"data", data, &cfg.DataBytes}); err != nil {
				return err
			}
			cfg.Dir, cfg.Metrics = dir, metrics
			if err := cfg.Validate(); err != nil {
				return usageError{err}
			}
			if !layoutOnly && metrics == "" {
				return usageError{fmt.Errorf("--metrics: the run samples the server's /metrics: give serve's --metrics-addr")}
			}
			ctx, cl, done, err := benchDial(socket)
			if err != nil {
				return err
			}
			defer done()
			start := time.Now()
			n, err := readbench.LayOutZipf(ctx, cl, cfg)
			if err != nil {
				return err
			}
			if n > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "laid out %d files of %s in %v\n", n, dir, time.Since(start).Round(time.Millisecond))
			}
			if layoutOnly {
				return nil
			}
			out := io.Discard
			if csvPath != "" {
				f, err := os.Create(csvPath)
				if err != nil {
					return err
				}
				defer f.Close()
				out = f
			}
			res, err := readbench.Zipf(ctx, cl, cfg, out)
			if err != nil {
				return err
			}
			return writeResults(cmd.OutOrStdout(), asJSON, res, func(w io.Writer) {
				fmt.Fprintf(w, "zipf: %d reads, %d writes in %.1f s; hit ratio %.4f (last interval %.4f); RSS max %d MiB, cache budget %d MiB; %d samples\n",
					res.Reads, res.Writes, res.Seconds, res.HitRatio, res.HitRatioLast, res.RSSMaxBytes>>20, res.BudgetBytes>>20, res.Samples)
			})
		},
	}
	f := c.Flags()
	f.StringVar(&socket, "socket", defaultClientSocket(), "the running server's Unix socket")
	f.StringVar(&metrics, "metrics", "", "the server's metrics endpoint (serve's --metrics-addr, such as 127.0.0.1:9464)")
	f.StringVar(&dir, "dir", "/zipf", "the data set's directory on the server")
	f.StringVar(&data, "data", "2560M", "the data set's bytes over all files (10× the cache to see it churn)")
	f.IntVar(&cfg.Files, "files", 64, "files of the data set")
	f.IntVar(&cfg.Workers, "workers", 4, "goroutines, one op each at a time")
	f.Float64Var(&cfg.WriteFrac, "write-frac", 0.05, "share of ops that are 4 KiB overwrites")
	f.Float64Var(&cfg.S, "s", 1.1, "the Zipf exponent (above 1)")
	f.DurationVar(&cfg.Duration, "duration", 60*time.Second, "measured time")
	f.DurationVar(&cfg.Interval, "interval", time.Second, "time between samples")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of the draws")
	f.StringVar(&csvPath, "csv", "", "write the samples to this CSV file")
	f.BoolVar(&layoutOnly, "layout-only", false, "lay the files out and stop")
	f.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	return c
}
