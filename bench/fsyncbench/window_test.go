package fsyncbench

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// TestWindow_SlowOpCounts: a window far shorter than one op stays open
// until the op completes, and the op counts though it began before the
// window opened.
func TestWindow_SlowOpCounts(t *testing.T) {
	var w window
	var counted int
	var wg sync.WaitGroup
	wg.Go(func() {
		for !w.done() {
			time.Sleep(30 * time.Millisecond) // the op
			if w.open() {
				counted++
				w.count()
			}
		}
	})
	el := w.run(time.Millisecond, time.Millisecond, nil)
	wg.Wait()
	if counted == 0 || el < 10*time.Millisecond {
		t.Fatalf("%d ops counted in a window of %v", counted, el)
	}
}

// TestWindow_Fail: a job's failure stops the window and is reported.
func TestWindow_Fail(t *testing.T) {
	var w window
	boom := errors.New("boom")
	go func() {
		time.Sleep(5 * time.Millisecond)
		w.fail(boom)
		w.fail(errors.New("second"))
	}()
	w.run(0, time.Hour, func(time.Duration) {})
	if !w.done() || !errors.Is(w.failure(), boom) {
		t.Fatalf("done %v, failure %v", w.done(), w.failure())
	}
}
