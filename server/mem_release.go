package server

import (
	"runtime/debug"
	"sync/atomic"
	"time"
)

// Giving memory back after a burst. Buffers go back to sync.Pool, which
// only the garbage collector empties, and the collector runs when the heap
// grows: after a burst of large requests (issue 14: 1 MiB reads on 20
// connections) nothing allocates, so without help Go keeps the burst's
// memory for minutes (until its forced collection every two minutes, and
// a second one for the pool's victim cache). So when the bytes in flight
// fall to zero after a burst of releaseBurstMin or more (or half the
// budget, if that is less), and stay there
// for releaseDelay, the server collects twice (the pool's primary cache,
// then its victim) and returns the freed memory to the kernel
// (debug.FreeOSMemory). Each burst costs two collections, at most once per
// releaseDelay: nothing in a steady load, whose bytes in flight do not
// fall to zero.

const (
	// releaseBurstMin: a burst smaller than this is not worth two
	// collections (the pools of a steady small load are a few MiB).
	releaseBurstMin = 32 << 20

	// releaseDelay: the bytes in flight must stay at zero this long, so
	// that a load with pauses between batches keeps its buffers.
	releaseDelay = time.Second
)

// memRelease schedules the release after a drained burst (budget.drained).
type memRelease struct {
	b         *budget
	scheduled atomic.Bool
	released  atomic.Uint64 // how many times, for tests
}

func newMemRelease(b *budget) *memRelease {
	m := &memRelease{b: b}
	b.burstMin = min(releaseBurstMin, b.bytesMax/2)
	b.drained = m.schedule
	return m
}

// schedule is called under the budget's lock: it only starts a timer.
func (m *memRelease) schedule() {
	if m.scheduled.CompareAndSwap(false, true) {
		time.AfterFunc(releaseDelay, m.release)
	}
}

func (m *memRelease) release() {
	defer m.scheduled.Store(false)
	if m.b.stats().Bytes != 0 {
		return // a new burst: its drain schedules again
	}
	debug.FreeOSMemory() // the pools' buffers move to their victim caches
	debug.FreeOSMemory() // and are freed, and the pages returned
	m.released.Add(1)
}
