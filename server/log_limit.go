package server

import (
	"sync"
	"time"
)

// logLimit rate-limits one kind of log line that a peer can cause at will
// (a refused connection, a connection over a limit): at most one line per
// interval, and that line says how many were suppressed since the last
// one. Without it one user's connect loop wrote 49,414 WARN lines in 20 s.
type logLimit struct {
	interval time.Duration
	now      func() time.Time // time.Now; a test's clock

	mu         sync.Mutex
	last       time.Time // when a line was last let through
	suppressed int       // lines held back since then
}

func newLogLimit(interval time.Duration) *logLimit {
	return &logLimit{interval: interval, now: time.Now}
}

// allow reports whether a line may be written now and, if so, how many
// were suppressed before it (to be logged with it).
func (l *logLimit) allow() (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if !l.last.IsZero() && now.Sub(l.last) < l.interval {
		l.suppressed++
		return false, 0
	}
	l.last = now
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}
