//go:build linux && amd64

package ebpf

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"ustore/trace"
)

// monoClock converts BPF's bpf_ktime_get_ns (CLOCK_MONOTONIC) to wall
// time, with an offset sampled once at Attach: good to the clock's drift
// over the process's life, which is well under a span's resolution.
type monoClock struct{ offset time.Duration }

func newMonoClock() monoClock {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return monoClock{}
	}
	return monoClock{offset: time.Duration(time.Now().UnixNano() - ts.Nano())}
}

func (c monoClock) wall(mono uint64) time.Time {
	return time.Unix(0, int64(mono)+int64(c.offset))
}

// waitEventSize is sizeof(struct wait_event) in bpf/markers.bpf.c.
const waitEventSize = 48

// decodeWaitEvent decodes one ring-buffer record.
func (c monoClock) decodeWaitEvent(b []byte) (WaitEvent, bool) {
	if len(b) < waitEventSize {
		return WaitEvent{}, false
	}
	le := binary.LittleEndian
	return WaitEvent{
		LockID: le.Uint64(b[0:]),
		Token:  le.Uint64(b[8:]),
		Span:   le.Uint64(b[16:]),
		Start:  c.wall(le.Uint64(b[24:])),
		Wait:   time.Duration(le.Uint64(b[32:])),
		Kind:   le.Uint32(b[40:]),
		Tid:    le.Uint32(b[44:]),
	}, true
}

// readEvents turns ring-buffer records into span events until Close.
func (p *Probes) readEvents() {
	defer close(p.done)
	for {
		rec, err := p.reader.Read()
		if errors.Is(err, ringbuf.ErrClosed) {
			return
		}
		if err != nil {
			continue // a lost wakeup or a short record: the next Read goes on
		}
		ev, ok := p.clock.decodeWaitEvent(rec.RawSample)
		if !ok {
			continue
		}
		var outcome int
		outcome, ev.TraceID = trace.AddLockWait(ev.Span, ev.Start, ev.Wait, waitAttributes(ev)...)
		switch outcome {
		case trace.LockWaitSpanEvent:
			p.spanEvents.Add(1)
			ev.Joined = JoinedSpanEvent
		case trace.LockWaitChildSpan:
			p.childSpans.Add(1)
			ev.Joined = JoinedChildSpan
		default:
			p.unspanned.Add(1)
		}
		if p.cfg.OnWait != nil {
			p.cfg.OnWait(ev)
		}
	}
}
