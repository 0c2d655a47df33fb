//go:build linux

package trace

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestNanotime_IsClockMonotonic: a CLOCK_MONOTONIC reading taken between
// two Nanotime readings lies between them, so a WaitEnd's End and BPF's
// bpf_ktime_get_ns begin times are on one clock.
func TestNanotime_IsClockMonotonic(t *testing.T) {
	for range 100 {
		before := Nanotime()
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			t.Fatal(err)
		}
		after := Nanotime()
		if mono := ts.Nano(); mono < before || mono > after {
			t.Fatalf("CLOCK_MONOTONIC %d is not within Nanotime's [%d, %d]", mono, before, after)
		}
	}
}

// TestWaitEnd_Layout pins the layout BPF reads (Invariant 3).
func TestWaitEnd_Layout(t *testing.T) {
	var e WaitEnd
	if unsafe.Sizeof(e) != 24 || unsafe.Offsetof(e.Token) != 8 || unsafe.Offsetof(e.End) != 16 {
		t.Fatalf("WaitEnd: size %d, Token@%d, End@%d; BPF reads 24, 8, 16",
			unsafe.Sizeof(e), unsafe.Offsetof(e.Token), unsafe.Offsetof(e.End))
	}
}
