package fsyncbench

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Counters are a server's counters: series (a Prometheus name with its
// labels, as the text exposition writes it) → value. Only ustore's own
// series are kept, without histogram buckets: a histogram is its _count
// and _sum.
type Counters map[string]float64

// scrapeBytesMax bounds a /metrics response.
const scrapeBytesMax = 16 << 20

// Scrape reads the counters from a Prometheus endpoint: "host:port", or a
// URL ("/metrics" is added to one without a path).
func Scrape(ctx context.Context, endpoint string) (Counters, error) {
	return ScrapeSeries(ctx, endpoint, func(series string) bool { return strings.HasPrefix(series, "ustore_") })
}

// ScrapeSeries is Scrape for the series keep selects (a series as the
// exposition writes it, labels included), of any family; histogram
// buckets are left out as Scrape leaves them.
func ScrapeSeries(ctx context.Context, endpoint string, keep func(series string) bool) (Counters, error) {
	url := endpoint
	if !strings.Contains(url, "://") {
		url = "http://" + url
	}
	if i := strings.Index(url, "://"); !strings.Contains(url[i+3:], "/") {
		url += "/metrics"
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fsyncbench: scrape: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fsyncbench: scrape %s: %s", url, resp.Status)
	}
	c := Counters{}
	sc := bufio.NewScanner(http.MaxBytesReader(nil, resp.Body, scrapeBytesMax))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		// The value follows the last space (a label value may hold
		// spaces; this exporter writes no timestamps).
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		series := line[:i]
		if !keep(series) {
			continue
		}
		if name, _, _ := strings.Cut(series, "{"); strings.HasSuffix(name, "_bucket") {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("fsyncbench: scrape %s: %q: %w", url, line, err)
		}
		c[series] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("fsyncbench: scrape %s: %w", url, err)
	}
	return c, nil
}

// Sub returns what moved from before to c, without the series that did
// not.
func (c Counters) Sub(before Counters) Counters {
	if c == nil {
		return nil
	}
	d := Counters{}
	for k, v := range c {
		if dv := v - before[k]; dv != 0 {
			d[k] = dv
		}
	}
	return d
}

// Summary is a delta's readable lines: a histogram as its count and mean
// ("commit_duration_seconds: 12, mean 3.41 ms"), a store counter as its
// change ("store_fsync_commit_total +1200"). Request latencies are left out
// (the workload measures its own).
func (c Counters) Summary() []string {
	var out []string
	for k, v := range c {
		name, labels, _ := strings.Cut(k, "{")
		if labels != "" {
			labels = "{" + labels
		}
		short := strings.TrimPrefix(name, "ustore_")
		switch {
		case strings.HasPrefix(short, "request_"), strings.HasSuffix(short, "_sum"):
		case strings.HasSuffix(short, "_count"):
			base := strings.TrimSuffix(short, "_count")
			line := fmt.Sprintf("%s%s: %.0f", base, labels, v)
			if sum, ok := c[strings.TrimSuffix(name, "_count")+"_sum"+labels]; ok && v > 0 {
				mean := sum / v
				if strings.HasSuffix(base, "_seconds") {
					line += ", mean " + fmtDuration(mean)
				} else {
					line += fmt.Sprintf(", mean %.2f", mean)
				}
			}
			out = append(out, line)
		default:
			out = append(out, fmt.Sprintf("%s%s %+.0f", short, labels, v))
		}
	}
	out = append(out, c.roundTrips()...)
	slices.Sort(out)
	return out
}

// roundTrips derives the device round trips on an fsync's path from the
// store's counters (store.RoundTrips): per log sync, and data writes per
// fsync that logged.
func (c Counters) roundTrips() []string {
	var out []string
	if syncs := c["ustore_store_log_syncs_total"]; syncs > 0 {
		out = append(out, fmt.Sprintf("round trips per log sync: %.2f", c["ustore_store_device_round_trips_log_sync_total"]/syncs))
	}
	if logged := c["ustore_store_fsync_logged_total"]; logged > 0 {
		out = append(out, fmt.Sprintf("round trips of data per logged fsync: %.2f", c["ustore_store_device_round_trips_fsync_data_total"]/logged))
	}
	return out
}

// fmtDuration writes seconds in the unit that suits them.
func fmtDuration(s float64) string {
	switch {
	case s >= 1:
		return fmt.Sprintf("%.2f s", s)
	case s >= 1e-3:
		return fmt.Sprintf("%.2f ms", s*1e3)
	}
	return fmt.Sprintf("%.1f µs", s*1e6)
}
