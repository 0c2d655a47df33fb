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
// order, just before the marker itself: a LockWaitEnds of n ends is n
// calls. Tests set it before any goroutine uses a lock and clear it after
// they are all done, so reading it needs no synchronisation; the fast path
// never reads it.
var markerHook func(m markerCall)

// markerCall is one marker call, as markerHook sees it.
type markerCall struct {
	begin     bool // LockWaitBegin, else one end of LockWaitEnds
	id, token uint64
	kind      uint32 // 0 for an end, which takes no kind
	end       int64  // the end's trace.Nanotime reading; 0 for a begin
}

// waitFor is the slow path shared by every lock type: mark the wait's begin,
// block in acquire, record the wait, and hand its end to endWait, which
// reports it to BPF now or, while DeferWaitEnds is on, after the lock was
// released. It is called only after a try-lock failed; write says whether
// acquire takes the lock exclusively (KindWrite in the marker's kind).
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
	t0 := trace.Nanotime()
	acquire()
	t1 := trace.Nanotime()
	class.record(time.Duration(t1 - t0))
	endWait(trace.WaitEnd{ID: id, Token: token, End: t1})
}
