package store

import (
	"time"

	"ustore/engine"
)

// The timestamps the store keeps lie in [TimeSecMin, TimeSecMax] seconds
// since the epoch: 1901-12-13T20:45:52Z to 2446-05-10T22:38:55Z, ext4's
// range with its extra timestamp bits (EXT4_EXTRA_TIMESTAMP_MAX). A time a
// client sets outside it is clamped to it, as Linux clamps to a
// filesystem's s_time_min and s_time_max (timestamp_truncate), the
// nanoseconds zeroed as there. The format could hold any int64, but not
// every reader can: a time.Time past year 292277026596 overflows, and
// seconds far outside this range mean nothing as a file's time.
const (
	TimeSecMin = -1 << 31               // S32_MIN
	TimeSecMax = 1<<34 - 1 + TimeSecMin // EXT4_EXTRA_TIMESTAMP_MAX
)

// clampTime returns t as the store keeps it.
func clampTime(t time.Time) engine.Timespec {
	switch sec := t.Unix(); {
	case sec < TimeSecMin:
		return engine.Timespec{Sec: TimeSecMin}
	case sec > TimeSecMax:
		return engine.Timespec{Sec: TimeSecMax}
	default:
		return engine.Timespec{Sec: sec, Nsec: uint32(t.Nanosecond())}
	}
}
