package server

import "time"

// A socket deadline set per frame costs a clock read and a change to the
// runtime's timer heap (~200 ns here), and a request set three of them and
// its response one or two: 8 % of the server's CPU at 64 clients doing
// stats (docs/BENCHMARKS.md, "Deadlines without a timer change per
// frame"). A coarseDeadline is set its timeout plus a sixteenth ahead and
// left alone while at least its timeout is left, so that consecutive
// frames share one setting: every wait still has at least its timeout,
// and at most a sixteenth more.

// coarseDeadline is a socket deadline as its owner last set it.
type coarseDeadline struct {
	at time.Time // zero: none set
}

// ensure makes the deadline at least d after now and at most d + d/16
// (none when d < 0), calling set only when the one in place is not.
func (cd *coarseDeadline) ensure(now time.Time, d time.Duration, set func(time.Time) error) error {
	if d < 0 {
		if cd.at.IsZero() {
			return nil
		}
		cd.at = time.Time{}
		return set(cd.at)
	}
	if !cd.at.IsZero() {
		if left := cd.at.Sub(now); left >= d && left <= d+d/16 {
			return nil
		}
	}
	cd.at = now.Add(d + d/16)
	return set(cd.at)
}
