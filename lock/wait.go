package lock

import (
	"sync/atomic"
	"time"

	"ustore/trace"
)

// tokens hands out wait tokens. A token is unique per wait in the process
// (2^64 waits never wrap in practice), so (lock id, token) is a key BPF can
// trust even when goroutines change threads mid-wait or locks share an id.
// Token 0 is never handed out: BPF may use it as "none". Only the slow path
// touches it, so its cache line bounces only under contention.
var tokens atomic.Uint64

// markerHook, when non-nil, sees every marker call the slow path makes, in
// order, just before the marker itself. Tests set it before any goroutine
// uses a lock and clear it after they are all done, so reading it needs no
// synchronisation; the fast path never reads it.
var markerHook func(m markerCall)

// markerCall is one marker call, as markerHook sees it.
type markerCall struct {
	begin     bool // LockWaitBegin, else LockWaitEnd
	id, token uint64
	kind      uint32 // 0 for LockWaitEnd, which takes no kind
}

// waitFor is the slow path shared by every lock type: mark the wait's begin,
// block in acquire, mark its end (the lock is held by then), record it. It
// is called only after a try-lock failed; write says whether acquire takes
// the lock exclusively (KindWrite in the marker's kind).
func waitFor(id uint64, class *Class, write bool, acquire func()) {
	token := tokens.Add(1)
	kind := kindOf(class)
	if write {
		kind |= KindWrite
	}
	if markerHook != nil {
		markerHook(markerCall{begin: true, id: id, token: token, kind: kind})
	}
	trace.LockWaitBegin(id, token, kind, trace.CurrentSpanKey()) // the waiter's request, when bound
	t0 := time.Now()
	acquire()
	wait := time.Since(t0)
	if markerHook != nil {
		markerHook(markerCall{id: id, token: token})
	}
	trace.LockWaitEnd(id, token)
	class.record(wait)
}
