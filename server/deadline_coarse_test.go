package server

import (
	"testing"
	"time"
)

// TestCoarseDeadline_Bounds: after every ensure the deadline is between d
// and d + d/16 ahead, and it is set again only when it has to be.
func TestCoarseDeadline_Bounds(t *testing.T) {
	var cd coarseDeadline
	var set time.Time
	sets := 0
	setFn := func(at time.Time) error { set, sets = at, sets+1; return nil }
	now := time.Unix(1000, 0)
	check := func(d time.Duration) {
		t.Helper()
		if err := cd.ensure(now, d, setFn); err != nil {
			t.Fatal(err)
		}
		if d < 0 {
			if !set.IsZero() {
				t.Fatalf("deadline %v, want none", set)
			}
			return
		}
		if left := set.Sub(now); left < d || left > d+d/16 {
			t.Fatalf("at +%v: deadline %v ahead, want [%v, %v]", now.Sub(time.Unix(1000, 0)), left, d, d+d/16)
		}
	}
	const idle = 160 * time.Second
	check(idle)
	if sets != 1 {
		t.Fatalf("%d sets, want 1", sets)
	}
	for range 110 { // a request every 0.1 s: one set per 10 s of them
		now = now.Add(100 * time.Millisecond)
		check(idle)
	}
	if sets != 2 {
		t.Fatalf("%d sets over 11 s of frames, want 2", sets)
	}
	check(time.Second) // a shorter one (a frame's) is set at once
	if sets != 3 {
		t.Fatalf("%d sets, want 3", sets)
	}
	check(idle) // and the longer one again after it
	now = now.Add(time.Hour)
	check(idle) // a deadline long past
	check(-1)
	check(-1)
	if sets != 6 {
		t.Fatalf("%d sets, want 6 (none twice is set once)", sets)
	}
}
