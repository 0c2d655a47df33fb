package readbench

import (
	"context"
	"fmt"
	"slices"

	"ustore/bench/fsyncbench"
)

// The server's series a sample reads (serve --metrics-addr): the page
// cache's (store.CacheStats, as ustore_store_cache_*), the dirty data's,
// and the process's RSS (the Prometheus process collector's).
const (
	seriesHits      = "ustore_store_cache_page_hits_total"
	seriesMisses    = "ustore_store_cache_page_misses_total"
	seriesPageBytes = "ustore_store_cache_page_bytes"
	seriesNodeBytes = "ustore_store_cache_node_bytes"
	seriesBudget    = "ustore_store_cache_budget_bytes"
	seriesDirty     = "ustore_store_dirty_bytes"
	seriesRSS       = "process_resident_memory_bytes"
)

var sampledSeries = []string{seriesHits, seriesMisses, seriesPageBytes, seriesNodeBytes, seriesBudget, seriesDirty, seriesRSS}

// scrape reads the sampled series from endpoint (serve --metrics-addr:
// "host:port" or a URL); a series missing there is an error: the server
// is not the one this package knows.
func scrape(ctx context.Context, endpoint string) (map[string]float64, error) {
	got, err := fsyncbench.ScrapeSeries(ctx, endpoint, func(series string) bool { return slices.Contains(sampledSeries, series) })
	if err != nil {
		return nil, err
	}
	for _, s := range sampledSeries {
		if _, ok := got[s]; !ok {
			return nil, fmt.Errorf("readbench: scrape %s: no series %s", endpoint, s)
		}
	}
	return got, nil
}

// Sample is one row of the zipf run's CSV.
type Sample struct {
	Seconds float64 // since the run's start
	// Reads and Writes are the workload's ops in the interval.
	Reads, Writes uint64
	// HitRatio is the page cache's over the interval (hits over hits
	// and misses of block look-ups), HitRatioRun since the run began.
	HitRatio, HitRatioRun float64
	// What the server holds now: cached file data, tree nodes, the
	// budget of both, dirty data, and the process's RSS.
	PageBytes, NodeBytes, BudgetBytes, DirtyBytes, RSSBytes int64
}

// csvHeader names Sample's columns, in csvRow's order.
const csvHeader = "seconds,reads,writes,hit_ratio,hit_ratio_run,page_bytes,node_bytes,budget_bytes,dirty_bytes,rss_bytes"

func (s Sample) csvRow() string {
	return fmt.Sprintf("%.3f,%d,%d,%.4f,%.4f,%d,%d,%d,%d,%d", s.Seconds, s.Reads, s.Writes, s.HitRatio, s.HitRatioRun,
		s.PageBytes, s.NodeBytes, s.BudgetBytes, s.DirtyBytes, s.RSSBytes)
}

// ratio is hits over hits and misses moved from a to b (0 when none).
func ratio(a, b map[string]float64) float64 {
	h, m := b[seriesHits]-a[seriesHits], b[seriesMisses]-a[seriesMisses]
	if h+m <= 0 {
		return 0
	}
	return h / (h + m)
}
