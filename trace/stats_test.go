package trace

import (
	"testing"
)

// TestRegisterStats_Served: a package's counters are read at each scrape,
// under their prefixed (and sanitised) names.
func TestRegisterStats_Served(t *testing.T) {
	clearOTELEnv(t)
	if err := RegisterStats("ustore_test_", func() map[string]float64 { return nil }); err != nil {
		t.Fatalf("metrics off: %v", err)
	}
	mustSetup(t, Config{MetricsAddr: "127.0.0.1:0"})
	n := 0.0
	err := RegisterStats("ustore_test_", func() map[string]float64 {
		n++
		return map[string]float64{"fsync_commit": n, "fallback.rename-dir": 7}
	})
	if err != nil {
		t.Fatal(err)
	}
	for want := 1.0; want <= 2; want++ {
		fams := scrape(t)
		f := fams["ustore_test_fsync_commit"]
		if f == nil || f.GetMetric()[0].GetUntyped().GetValue() != want {
			t.Fatalf("scrape %v: fsync_commit %v; families %v", want, f, keys(fams))
		}
		if g := fams["ustore_test_fallback_rename_dir"]; g == nil || g.GetMetric()[0].GetUntyped().GetValue() != 7 {
			t.Fatalf("sanitised name not served: %v", keys(fams))
		}
	}
}
