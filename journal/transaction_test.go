package journal

import (
	"fmt"
	"testing"
)

// A Transid prints in decimal whichever verb a message uses, so that logs,
// span attributes and dumps agree.
func TestTransid_String(t *testing.T) {
	for _, tc := range []struct {
		tid  Transid
		want string
	}{
		{0, "0"},
		{1, "1"},
		{1 << 40, "1099511627776"},
		{^Transid(0), "18446744073709551615"},
	} {
		var s fmt.Stringer = tc.tid
		if got := s.String(); got != tc.want {
			t.Errorf("Transid(%d).String() = %q, want %q", uint64(tc.tid), got, tc.want)
		}
		if got := fmt.Sprintf("%v|%s|%d", tc.tid, tc.tid, tc.tid); got != tc.want+"|"+tc.want+"|"+tc.want {
			t.Errorf("Transid(%d) formats as %q", uint64(tc.tid), got)
		}
	}
}
