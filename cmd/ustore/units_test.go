package main

import (
	"strconv"
	"testing"
)

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{
		"4096": 4096, "4k": 4096, "4K": 4096, "4KiB": 4096, "4kb": 4096,
		"16M": 16 << 20, "1G": 1 << 30, "2t": 2 << 40, " 8 ": 8,
	} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "k", "-1", "1.5G", "1X", "99999999999T"} {
		if _, err := parseBytes(bad); err == nil {
			t.Errorf("parseBytes(%q) succeeded", bad)
		}
	}
}

// FuzzParseBytes: whatever the input, parseBytes either fails or returns a
// non-negative count that a plain number formats back to.
func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"4k", "1G", "123", "9223372036854775807", "8EiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseBytes(s)
		if err != nil {
			return
		}
		if v < 0 {
			t.Fatalf("parseBytes(%q) = %d", s, v)
		}
		if back, err := parseBytes(strconv.FormatInt(v, 10)); err != nil || back != v {
			t.Fatalf("round trip of %d: %d, %v", v, back, err)
		}
	})
}
