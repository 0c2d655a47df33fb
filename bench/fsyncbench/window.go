package fsyncbench

import (
	"sync"
	"sync/atomic"
	"time"
)

// The phases of a window.
const (
	warming int32 = iota
	measuring
	stopped
)

// window is the measured stretch of time a workload's jobs share. An op
// counts when it completes while the window is open, whenever it began —
// so a window shorter than one slow op still sees that op — and the window
// stays open past its duration until at least one op has counted: a
// measurement with no op has nothing to report (CI, 2 slow cores under
// -race, once saw a 50 ms window with none).
type window struct {
	state   atomic.Int32
	counted atomic.Int64 // ops counted, of the kind that keeps the window open

	mu  sync.Mutex
	err error // the first job's failure
}

// open reports whether the window is open now: an op completing now
// counts.
func (w *window) open() bool { return w.state.Load() == measuring }

// done reports whether the jobs should stop.
func (w *window) done() bool { return w.state.Load() == stopped }

// count records one counted op of the kind the window waits for.
func (w *window) count() { w.counted.Add(1) }

// fail stops the window; the first error is the one reported.
func (w *window) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
	w.state.Store(stopped)
}

func (w *window) failure() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// progressEvery is how often run calls tick.
const progressEvery = 200 * time.Millisecond

// run lets the jobs warm up for warmup, opens the window for d and until
// one op has counted, then stops the jobs. It returns how long the window
// was open. tick, if set, is called with the time elapsed every
// progressEvery while the window is open.
func (w *window) run(warmup, d time.Duration, tick func(elapsed time.Duration)) time.Duration {
	time.Sleep(warmup)
	if !w.state.CompareAndSwap(warming, measuring) {
		return 0 // a job failed
	}
	t0 := time.Now()
	ticker := time.NewTicker(progressEvery)
	defer ticker.Stop()
	end := time.NewTimer(d)
	defer end.Stop()
	for {
		select {
		case <-ticker.C:
			if tick != nil {
				tick(time.Since(t0))
			}
			if w.done() {
				return time.Since(t0)
			}
		case <-end.C:
			if w.counted.Load() > 0 || w.done() {
				w.state.CompareAndSwap(measuring, stopped)
				return time.Since(t0)
			}
			end.Reset(time.Millisecond)
		}
	}
}
