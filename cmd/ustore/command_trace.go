package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

func newTraceCommand() *cobra.Command {
	var (
		metrics  string
		interval time.Duration
		count    int
		top      int
		asJSON   bool
	)
	c := &cobra.Command{
		Use:   "trace",
		Short: "Live view of a running server's eBPF measurements: lock waits, commit phases, io_uring",
		Long: `Show what the eBPF programs of a running 'ustore serve --ebpf auto|on
--metrics-addr ADDR' measure, refreshed every --interval: the lock classes
with the most total wait (class/mode, e.g. fs.level0/write), the commit
phases, whole commits and log syncs, the io_uring operations by opcode as
the kernel timed them, and kernel lock contention by flags. Each block
shows the samples of the last interval (count, rate, mean, p50 and p99 as
power-of-two bucket bounds) and the totals since the server started.

It reads the server's Prometheus endpoint (--metrics, the serve's
--metrics-addr), so it needs no privileges and works from another machine
that can reach it. --json prints one snapshot of the totals and exits.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if interval <= 0 || top <= 0 || count < 0 {
				return usageError{fmt.Errorf("--interval and --top must be positive, --count not negative")}
			}
			url := metricsURL(metrics)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			out := cmd.OutOrStdout()
			if asJSON {
				s, err := scrapeTrace(ctx, url)
				if err != nil {
					return err
				}
				return writeResults(out, true, s, nil)
			}
			clear := showProgress("auto", out) // a terminal: redraw in place
			return liveTrace(ctx, out, url, interval, count, top, clear)
		},
	}
	f := c.Flags()
	f.StringVar(&metrics, "metrics", "127.0.0.1:9464", "the server's metrics endpoint: its --metrics-addr (host:port) or a URL")
	f.DurationVar(&interval, "interval", time.Second, "refresh interval")
	f.IntVar(&count, "count", 0, "stop after this many refreshes (0: until interrupted)")
	f.IntVar(&top, "top", 10, "lock classes shown")
	f.BoolVar(&asJSON, "json", false, "print one snapshot of the totals as JSON and exit")
	return c
}

// metricsURL accepts host:port, :port or a URL.
func metricsURL(s string) string {
	if strings.Contains(s, "://") {
		return s
	}
	if strings.HasPrefix(s, ":") {
		s = "127.0.0.1" + s
	}
	return "http://" + s + "/metrics"
}

// liveTrace scrapes every interval and prints the view, until ctx ends or
// count refreshes were shown.
func liveTrace(ctx context.Context, out io.Writer, url string, interval time.Duration, count, top int, clear bool) error {
	prev, err := scrapeTrace(ctx, url)
	if err != nil {
		return err
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for shown := 0; count == 0 || shown < count; shown++ {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		cur, err := scrapeTrace(ctx, url)
		if err != nil {
			return err
		}
		if clear {
			fmt.Fprint(out, "\x1b[H\x1b[2J")
		}
		printTraceView(out, prev, cur, top, url)
		prev = cur
	}
	return nil
}

// printTraceView prints one refresh: each block's rows for the interval
// since prev, with totals.
func printTraceView(out io.Writer, prev, cur *traceSnapshot, top int, url string) {
	dt := cur.Time.Sub(prev.Time).Seconds()
	fmt.Fprintf(out, "ustore trace  %s  %s  (interval %.1fs; latencies are bucket bounds)\n", cur.Time.Format("15:04:05"), url, dt)
	locks := cur.LockWaits
	if len(locks) > top {
		locks = locks[:top]
	}
	printBlock(out, "LOCK WAITS (top by total wait)", "class/mode", locks, prev.LockWaits, dt)
	printBlock(out, "COMMIT PHASES AND LOG SYNCS", "phase", cur.Phases, prev.Phases, dt)
	printBlock(out, "IO_URING (submit to completion, kernel)", "op", cur.IOUring, prev.IOUring, dt)
	printBlock(out, "KERNEL LOCK CONTENTION", "flags", cur.KernelLocks, prev.KernelLocks, dt)
	printBlock(out, "IO_URING REACTOR OFF-CPU (wait: slept; preempted: runnable, no CPU)", "reason", cur.OffCPU, prev.OffCPU, dt)
	fmt.Fprintf(out, "long lock waits: %.0f span events, %.0f child spans, %.0f without span, %.0f lost\n\n",
		cur.Events["span_event"], cur.Events["child_span"], cur.Events["no_span"], cur.Events["lost"])
}

func printBlock(out io.Writer, title, key string, rows, prevRows []traceRow, dt float64) {
	fmt.Fprintf(out, "\n%s\n", title)
	if len(rows) == 0 {
		fmt.Fprintln(out, "  (none)")
		return
	}
	byName := map[string]*traceRow{}
	for i := range prevRows {
		byName[prevRows[i].Name] = &prevRows[i]
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\tn\t/s\tmean\tp50\tp99\ttotal n\ttotal wait\t\n", key)
	for _, r := range rows {
		d := r.minus(byName[r.Name])
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%s\t%s\t%s\t%d\t%s\t\n", r.Name, d.Count, float64(d.Count)/dt,
			seconds(d.MeanSeconds), seconds(d.P50Seconds), seconds(d.P99Seconds), r.Count, seconds(r.SumSeconds))
	}
	tw.Flush()
}

// seconds prints a duration in seconds compactly: "-" for none, ">34s"
// past the last bucket.
func seconds(s float64) string {
	switch {
	case s == 0:
		return "-"
	case s > 1e300:
		return ">34s"
	}
	return time.Duration(s * 1e9).Round(time.Microsecond / 10).String()
}
