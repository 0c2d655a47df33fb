package main

import (
	"fmt"
	"strconv"
	"strings"
)

// parseBytes reads a byte count with an optional binary suffix: 4096, 4k,
// 4KiB, 16M, 1G, 2T (case-insensitive; k = 1024).
func parseBytes(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToLower(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "ib"), "b")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k':
			mult = 1 << 10
		case 'm':
			mult = 1 << 20
		case 'g':
			mult = 1 << 30
		case 't':
			mult = 1 << 40
		}
		if mult != 1 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a byte count (examples: 4096, 4k, 16M, 1G)", s)
	}
	if v > (1<<62)/mult {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return v * mult, nil
}
