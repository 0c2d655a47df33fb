package trace

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// RegisterStats publishes a package's own counters on /metrics: at each
// scrape, fn is called and every value it returns is served as an untyped
// sample named prefix+key (characters a Prometheus name may not hold become
// '_'). The store's Stats reach `ustore bench` this way: no protocol op,
// the same endpoint as the histograms. Call it after Setup; while metrics
// are off it does nothing and returns nil. fn runs on the scrape's
// goroutine and must be safe to call at any time.
func RegisterStats(prefix string, fn func() map[string]float64) error {
	return RegisterCollector(statsCollector{prefix: prefix, fn: fn})
}

// statsCollector is an unchecked collector (its Describe sends nothing):
// the names are fn's keys, known only at scrape time.
type statsCollector struct {
	prefix string
	fn     func() map[string]float64
}

func (statsCollector) Describe(chan<- *prometheus.Desc) {}

func (c statsCollector) Collect(ch chan<- prometheus.Metric) {
	for k, v := range c.fn() {
		desc := prometheus.NewDesc(metricName(c.prefix+k), "ustore statistics counter "+k+".", nil, nil)
		ch <- prometheus.MustNewConstMetric(desc, prometheus.UntypedValue, v)
	}
}

// metricName maps s onto Prometheus's [a-zA-Z_:][a-zA-Z0-9_:]*.
func metricName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == ':':
			return r
		}
		return '_'
	}, s)
}
