package fsyncbench

import (
	"slices"
	"time"
)

// Latency summarises latency samples; times are in µs. Percentiles are
// exact: taken from the sorted samples.
type Latency struct {
	Count  int     `json:"count"`
	MeanUS float64 `json:"mean_us"`
	P50US  float64 `json:"p50_us"`
	P90US  float64 `json:"p90_us"`
	P99US  float64 `json:"p99_us"`
	P999US float64 `json:"p999_us"`
	MaxUS  float64 `json:"max_us"`
}

// Summarize sorts samples (in place) and summarises them.
func Summarize(samples []time.Duration) Latency {
	if len(samples) == 0 {
		return Latency{}
	}
	slices.Sort(samples)
	var sum time.Duration
	for _, s := range samples {
		sum += s
	}
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	pct := func(p float64) float64 { return us(samples[min(int(p*float64(len(samples))), len(samples)-1)]) }
	return Latency{
		Count: len(samples), MeanUS: us(sum) / float64(len(samples)),
		P50US: pct(0.50), P90US: pct(0.90), P99US: pct(0.99), P999US: pct(0.999), MaxUS: us(samples[len(samples)-1]),
	}
}
