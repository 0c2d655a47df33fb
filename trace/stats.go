package trace

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// StatKind is how a Stat is served, by Prometheus's conventions.
type StatKind uint8

const (
	// StatCounter is a count since start that only grows: served as a
	// counter named <prefix><name>_total.
	StatCounter StatKind = iota
	// StatGauge is a value now (bytes buffered, entries cached): served as
	// a gauge named <prefix><name>.
	StatGauge
)

// Stat is one value of a package's statistics, read at a scrape.
type Stat struct {
	Name string // without the prefix, and for a counter without _total
	Kind StatKind
	Help string
	// Label and LabelValue, when Label is set, put the value in a labelled
	// series of its family (fsync fallbacks by reason). All the Stats of
	// one name carry the same Label.
	Label, LabelValue string
	Value             float64
}

// RegisterStats publishes a package's own statistics on /metrics: at each
// scrape, fn is called and every Stat it returns is served, a counter as
// prefix+Name+"_total" and a gauge as prefix+Name (characters a Prometheus
// name may not hold become '_'). The store's Stats reach `ustore bench`
// this way: no protocol op, the same endpoint as the histograms. Call it
// after Setup; while metrics are off it does nothing and returns nil. fn
// runs on the scrape's goroutine and must be safe to call at any time.
func RegisterStats(prefix string, fn func() []Stat) error {
	return RegisterCollector(statsCollector{prefix: prefix, fn: fn})
}

// statsCollector is an unchecked collector (its Describe sends nothing):
// the names are fn's, known only at scrape time.
type statsCollector struct {
	prefix string
	fn     func() []Stat
}

func (statsCollector) Describe(chan<- *prometheus.Desc) {}

func (c statsCollector) Collect(ch chan<- prometheus.Metric) {
	descs := map[string]*prometheus.Desc{} // one per family
	for _, s := range c.fn() {
		name, typ := metricName(c.prefix+s.Name), prometheus.GaugeValue
		if s.Kind == StatCounter {
			name, typ = name+"_total", prometheus.CounterValue
		}
		var labels, values []string
		if s.Label != "" {
			labels, values = []string{s.Label}, []string{s.LabelValue}
		}
		d, ok := descs[name]
		if !ok {
			d = prometheus.NewDesc(name, s.Help, labels, nil)
			descs[name] = d
		}
		m, err := prometheus.NewConstMetric(d, typ, s.Value, values...)
		if err != nil {
			// A Stat whose label disagrees with its family's: the scrape
			// reports it, the server goes on.
			m = prometheus.NewInvalidMetric(d, err)
		}
		ch <- m
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
