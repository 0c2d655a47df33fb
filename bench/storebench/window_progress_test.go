package storebench

import (
	"testing"
	"time"
)

// TestConfig_Window_Numbering: a workload's window is its place among the
// selected workloads in the order Run runs them, whatever the order given.
func TestConfig_Window_Numbering(t *testing.T) {
	var got []WindowProgress
	cfg := Config{Workloads: []string{"randwrite", "seqread"}, Window: func(p WindowProgress) { got = append(got, p) }}
	for _, w := range []string{"seqread", "randwrite"} {
		wt := cfg.window(w, 100, 0)
		wt.next = time.Time{} // due now: the first tick reports
		wt.tick(40)
		wt.tick(50) // within the second: not reported
	}
	want := []WindowProgress{{Workload: "seqread", Window: 1, Windows: 2, Done: 40, Total: 100},
		{Workload: "randwrite", Window: 2, Windows: 2, Done: 40, Total: 100}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		got[i].Elapsed = 0
		if got[i] != want[i] {
			t.Errorf("%d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	var none windowTicker // an untimed step (a layout): reports nothing
	none.tick(1)
	if len(got) != 2 {
		t.Errorf("the zero ticker reported: %+v", got[2:])
	}
	if wt := (&Config{Workloads: []string{"seqwrite"}}).window("seqwrite", 1, 0); wt.fn != nil {
		t.Error("a ticker without Config.Window")
	}
}
