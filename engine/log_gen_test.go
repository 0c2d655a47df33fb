package engine

import (
	"fmt"
	"testing"

	"ustore/journal"
)

// The typed numbers print alike: a Transid and a Bytenr in decimal, a
// LogGen as its Transid in decimal, a dot, and its sub-transaction.
func TestLogGen_String(t *testing.T) {
	for _, tc := range []struct {
		tid  journal.Transid
		sub  uint64
		want string
	}{
		{1, 0, "1.0"},
		{7, 3, "7.3"},
		{1 << 30, LogSubMax, fmt.Sprintf("%d.%d", 1<<30, LogSubMax)},
	} {
		g := MakeLogGen(tc.tid, tc.sub)
		if g.Transid() != tc.tid || g.Sub() != tc.sub {
			t.Errorf("MakeLogGen(%v, %d) = %v: Transid %v, Sub %d", tc.tid, tc.sub, g, g.Transid(), g.Sub())
		}
		if got := fmt.Sprint(g); got != tc.want {
			t.Errorf("MakeLogGen(%v, %d) prints %q, want %q", tc.tid, tc.sub, got, tc.want)
		}
		if got, want := fmt.Sprint(g.Transid()), tc.want[:len(fmt.Sprint(uint64(tc.tid)))]; got != want {
			t.Errorf("its Transid prints %q, want %q", got, want)
		}
	}
}

func TestBytenr_String(t *testing.T) {
	var s fmt.Stringer = Bytenr(1 << 20)
	if got := s.String(); got != "1048576" {
		t.Errorf("Bytenr(1<<20).String() = %q", got)
	}
	if got := fmt.Sprintf("%v %s %d", Bytenr(4096), Bytenr(4096), Bytenr(4096)); got != "4096 4096 4096" {
		t.Errorf("Bytenr(4096) formats as %q", got)
	}
}
