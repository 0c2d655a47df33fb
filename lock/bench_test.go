package lock

import (
	"sync"
	"testing"
)

// The uncontended benchmarks measure the fast path against the sync lock it
// wraps; the difference is what every acquisition in ustore pays for being
// traceable.

func BenchmarkRWMutex_Uncontended(b *testing.B) {
	m := newRWMutex(NewClass("bench", 1), 1)
	shared := 0
	b.Run("Lock", func(b *testing.B) {
		for b.Loop() {
			m.Lock()
			shared++
			m.Unlock()
		}
	})
	b.Run("RLock", func(b *testing.B) {
		for b.Loop() {
			m.RLock()
			_ = shared
			m.RUnlock()
		}
	})
}

func BenchmarkSyncRWMutex_Uncontended(b *testing.B) {
	var m sync.RWMutex
	shared := 0
	b.Run("Lock", func(b *testing.B) {
		for b.Loop() {
			m.Lock()
			shared++
			m.Unlock()
		}
	})
	b.Run("RLock", func(b *testing.B) {
		for b.Loop() {
			m.RLock()
			_ = shared
			m.RUnlock()
		}
	})
}

func BenchmarkMutex_Uncontended(b *testing.B) {
	m := newMutex(NewClass("bench", 1), 1)
	shared := 0
	for b.Loop() {
		m.Lock()
		shared++
		m.Unlock()
	}
}

func BenchmarkSyncMutex_Uncontended(b *testing.B) {
	var m sync.Mutex
	shared := 0
	for b.Loop() {
		m.Lock()
		shared++
		m.Unlock()
	}
}

// The contended benchmarks run 4 goroutines per CPU on one lock with a tiny
// critical section; "Write" takes only write locks, "Mixed" one write lock
// in eight. slow/op is the fraction of acquisitions that took the slow path
// (markers, clock readings, histogram).

func BenchmarkRWMutex_Contended(b *testing.B) {
	for _, mode := range []struct {
		name       string
		writeEvery int
	}{{"Write", 1}, {"Mixed", 8}} {
		b.Run(mode.name, func(b *testing.B) {
			c := NewClass("bench", 1)
			m := newRWMutex(c, 1)
			shared := 0
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					if i%mode.writeEvery == 0 {
						m.Lock()
						shared++
						m.Unlock()
					} else {
						m.RLock()
						_ = shared
						m.RUnlock()
					}
				}
			})
			b.ReportMetric(float64(c.Snapshot().Contended)/float64(b.N), "slow/op")
		})
	}
}

func BenchmarkSyncRWMutex_Contended(b *testing.B) {
	for _, mode := range []struct {
		name       string
		writeEvery int
	}{{"Write", 1}, {"Mixed", 8}} {
		b.Run(mode.name, func(b *testing.B) {
			var m sync.RWMutex
			shared := 0
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					if i%mode.writeEvery == 0 {
						m.Lock()
						shared++
						m.Unlock()
					} else {
						m.RLock()
						_ = shared
						m.RUnlock()
					}
				}
			})
		})
	}
}
