package fsyncbench

import "testing"

// TestOptions_InWindow_At: a workload numbers its own windows from 1 when
// run alone, and within the range a caller that runs it several times gave.
func TestOptions_InWindow_At(t *testing.T) {
	var o Options
	if w, n := o.at(1, 3); w != 2 || n != 3 {
		t.Errorf("alone: window 2 of 3 is %d of %d", w, n)
	}
	o = o.InWindow(5, 8)
	if w, n := o.at(0, 1); w != 5 || n != 8 {
		t.Errorf("in window 5 of 8: %d of %d", w, n)
	}
	if w, n := o.at(1, 2); w != 6 || n != 8 {
		t.Errorf("second of two from window 5 of 8: %d of %d", w, n)
	}
}
