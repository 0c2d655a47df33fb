package trace

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// TestRegisterStats_Served: a package's statistics are read at each
// scrape, under their prefixed (and sanitised) names, a counter as a
// counter with _total, a gauge as a gauge, a labelled value in its
// family's series.
func TestRegisterStats_Served(t *testing.T) {
	clearOTELEnv(t)
	if err := RegisterStats("ustore_test_", func() []Stat { return nil }); err != nil {
		t.Fatalf("metrics off: %v", err)
	}
	mustSetup(t, Config{MetricsAddr: "127.0.0.1:0"})
	n := 0.0
	err := RegisterStats("ustore_test_", func() []Stat {
		n++
		return []Stat{
			{Name: "fsync_commit", Kind: StatCounter, Help: "h", Value: n},
			{Name: "dirty-bytes", Kind: StatGauge, Help: "h", Value: 7},
			{Name: "fallbacks", Kind: StatCounter, Help: "h", Label: "reason", LabelValue: "renamed_dir", Value: 2},
			{Name: "fallbacks", Kind: StatCounter, Help: "h", Label: "reason", LabelValue: "poisoned", Value: 3},
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for want := 1.0; want <= 2; want++ {
		fams := scrape(t)
		f := fams["ustore_test_fsync_commit_total"]
		if f == nil || f.GetType() != dto.MetricType_COUNTER || f.GetMetric()[0].GetCounter().GetValue() != want {
			t.Fatalf("scrape %v: fsync_commit_total %v; families %v", want, f, keys(fams))
		}
		g := fams["ustore_test_dirty_bytes"]
		if g == nil || g.GetType() != dto.MetricType_GAUGE || g.GetMetric()[0].GetGauge().GetValue() != 7 {
			t.Fatalf("gauge (sanitised name) not served: %v; families %v", g, keys(fams))
		}
		fb := fams["ustore_test_fallbacks_total"]
		got := map[string]float64{}
		for _, m := range fb.GetMetric() {
			got[m.GetLabel()[0].GetName()+"="+m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
		if len(got) != 2 || got["reason=renamed_dir"] != 2 || got["reason=poisoned"] != 3 {
			t.Fatalf("labelled counter: %v", got)
		}
	}
}
