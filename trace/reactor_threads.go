package trace

import (
	"slices"
	"sync"
)

// Reactor threads: ring/ registers the OS thread each io_uring reactor is
// locked to, for as long as the reactor runs, and the eBPF loader watches
// the set to measure those threads' off-CPU time (sched_switch filters by
// thread id, and only ring/ knows which threads are reactors). The set is
// process-wide, as the markers are.

var reactorThreads struct {
	mu       sync.Mutex
	tids     []int
	watchers map[int]func([]int)
	next     int
}

// AddReactorThread registers tid as a reactor's thread until the returned
// function is called.
func AddReactorThread(tid int) (remove func()) {
	reactorThreads.mu.Lock()
	reactorThreads.tids = append(reactorThreads.tids, tid)
	notifyReactorThreads()
	reactorThreads.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			reactorThreads.mu.Lock()
			defer reactorThreads.mu.Unlock()
			if i := slices.Index(reactorThreads.tids, tid); i >= 0 {
				reactorThreads.tids = slices.Delete(reactorThreads.tids, i, i+1)
			}
			notifyReactorThreads()
		})
	}
}

// ReactorThreads returns the registered reactor threads, oldest first.
func ReactorThreads() []int {
	reactorThreads.mu.Lock()
	defer reactorThreads.mu.Unlock()
	return slices.Clone(reactorThreads.tids)
}

// WatchReactorThreads calls fn with the set now and after every change,
// until stop. Calls are serialised (under the registry's lock: fn must
// not register threads itself) and fn gets a copy.
func WatchReactorThreads(fn func(tids []int)) (stop func()) {
	reactorThreads.mu.Lock()
	defer reactorThreads.mu.Unlock()
	if reactorThreads.watchers == nil {
		reactorThreads.watchers = map[int]func([]int){}
	}
	id := reactorThreads.next
	reactorThreads.next++
	reactorThreads.watchers[id] = fn
	fn(slices.Clone(reactorThreads.tids))
	return func() {
		reactorThreads.mu.Lock()
		defer reactorThreads.mu.Unlock()
		delete(reactorThreads.watchers, id)
	}
}

// notifyReactorThreads runs with reactorThreads.mu held.
func notifyReactorThreads() {
	for _, fn := range reactorThreads.watchers {
		fn(slices.Clone(reactorThreads.tids))
	}
}
