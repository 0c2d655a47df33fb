package storebench

import "time"

// WindowProgress is where a workload's timed window is, reported about once
// a second (Config.Window) for a "[n/N]" and a time left.
type WindowProgress struct {
	Workload        string // seqwrite, seqread, randwrite
	Window, Windows int    // this workload among the run's, 1-based
	Done, Total     int64  // bytes (seqwrite, seqread) or overwrites (randwrite with --count); Total 0 when timed
	Elapsed         time.Duration
	Duration        time.Duration // randwrite by time; 0 otherwise
}

// windowTicker calls Config.Window about once a second for one window.
// The zero ticker (no callback, or an untimed step such as a layout)
// does nothing.
type windowTicker struct {
	fn    func(WindowProgress)
	p     WindowProgress
	start time.Time
	next  time.Time
}

// runOrder is the order Run runs the workloads in, whatever their order in
// Config.Workloads.
var runOrder = []string{"seqwrite", "seqread", "randwrite"}

// window starts the ticker of workload's window; total and duration as in
// WindowProgress.
func (c *Config) window(workload string, total int64, duration time.Duration) windowTicker {
	if c.Window == nil {
		return windowTicker{}
	}
	p := WindowProgress{Workload: workload, Total: total, Duration: duration}
	for _, w := range runOrder {
		if c.has(w) {
			p.Windows++
			if w == workload {
				p.Window = p.Windows
			}
		}
	}
	now := time.Now()
	return windowTicker{fn: c.Window, p: p, start: now, next: now.Add(time.Second)}
}

// tick reports done at most once a second; callers call it every few ops.
func (t *windowTicker) tick(done int64) {
	if t.fn == nil {
		return
	}
	if now := time.Now(); !now.Before(t.next) {
		t.next = now.Add(time.Second)
		t.p.Done, t.p.Elapsed = done, now.Sub(t.start)
		t.fn(t.p)
	}
}
