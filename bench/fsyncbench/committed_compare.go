package fsyncbench

import (
	"context"
	"fmt"
	"slices"
)

// The labels CommittedCompare gives the two servers.
const (
	LabelLockFree = "lock-free"
	LabelLocked   = "locked"
)

// CommittedCompare runs committed-check on two servers — lockFree a normal
// one, locked one started with `ustore serve --ablate-committed-lock` —
// for each mode, reps times, alternating which goes first so that drift
// on a shared disk hits both alike.
func CommittedCompare(ctx context.Context, lockFree, locked Target, cfg CommittedConfig, modes []string, reps int) ([]CommittedResult, error) {
	var out []CommittedResult
	n, count := 0, len(modes)*reps*2
	for _, mode := range modes {
		for rep := range reps {
			order := []struct {
				t     Target
				label string
			}{{lockFree, LabelLockFree}, {locked, LabelLocked}}
			if rep%2 == 1 {
				slices.Reverse(order)
			}
			for _, o := range order {
				c := cfg
				c.RW, c.Label = mode, o.label
				n++
				c.Options = c.InWindow(n, count)
				r, err := CommittedCheck(ctx, o.t, c)
				if err != nil {
					return out, fmt.Errorf("committed-check %s on the %s server: %w", mode, o.label, err)
				}
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// CommittedRatio compares the two servers on one mode.
type CommittedRatio struct {
	RW       string  `json:"rw"`
	LockFree float64 `json:"lock_free_ops_per_sec"` // median over repetitions
	Locked   float64 `json:"locked_ops_per_sec"`
	Ratio    float64 `json:"ratio"` // LockFree / Locked
}

// CommittedRatios pairs the results labelled LabelLockFree and LabelLocked
// by mode.
func CommittedRatios(rs []CommittedResult) []CommittedRatio {
	var out []CommittedRatio
	for _, mode := range CommittedModes {
		var free, locked []float64
		for _, r := range rs {
			switch {
			case r.RW != mode:
			case r.Label == LabelLockFree:
				free = append(free, r.OpsPerSec)
			case r.Label == LabelLocked:
				locked = append(locked, r.OpsPerSec)
			}
		}
		if len(free) == 0 || len(locked) == 0 {
			continue
		}
		q := CommittedRatio{RW: mode, LockFree: median(free), Locked: median(locked)}
		if q.Locked > 0 {
			q.Ratio = q.LockFree / q.Locked
		}
		out = append(out, q)
	}
	return out
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
