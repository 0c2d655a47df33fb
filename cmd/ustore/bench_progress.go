package main

// The progress line of the bench commands: where a run is among its
// configurations ([n/N]) and when it will end (ETA), on stderr while it is
// a terminal (--progress auto). Each configuration runs for a fixed time,
// so what is left is the rest of this one and the whole of those after it;
// the setup between configurations (laying out, syncing) is not counted.

import (
	"fmt"
	"time"
)

// benchETA is the time left of a run of count configurations of duration
// each, elapsed into configuration index (1-based).
func benchETA(index, count int, elapsed, duration time.Duration) time.Duration {
	left := time.Duration(count-index)*duration + max(0, duration-elapsed)
	return left.Round(time.Second)
}

// benchStep is the "[n/N]" and "ETA 1m5s" around a progress line's middle.
func benchStep(index, count int, elapsed, duration time.Duration, middle string) string {
	return fmt.Sprintf("[%d/%d] %s  ETA %v", index, count, middle, benchETA(index, count, elapsed, duration))
}

// countETA is the time left of a window that is a count of total (bytes,
// files, ops), done of them in elapsed, at the rate so far. The windows
// after it, of sizes the line does not know, are not counted.
func countETA(done, total int64, elapsed time.Duration) time.Duration {
	if done <= 0 || total <= done {
		return 0
	}
	return time.Duration(float64(elapsed) * float64(total-done) / float64(done)).Round(time.Second)
}

// benchCountStep is benchStep for a window that is a count.
func benchCountStep(index, count int, done, total int64, elapsed time.Duration, middle string) string {
	return fmt.Sprintf("[%d/%d] %s  ETA %v", index, count, middle, countETA(done, total, elapsed))
}
