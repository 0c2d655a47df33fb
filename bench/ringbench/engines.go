package ringbench

import (
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"ustore/ring"
)

// runRingAsync is fio's io_uring loop over Ring.Submit: QD ops in flight;
// every completion that has arrived is reaped and resubmitted in one batch.
func runRingAsync(cfg *Config, r *ring.Ring, fd int, rw string, qd int) (histogram, uint64, time.Duration, error) {
	var h histogram
	bufs := buffers(r, qd, cfg.BS)
	w := newWorkload(cfg, rw, 1)
	kind := ring.OpWrite
	if isRead(rw) {
		kind = ring.OpRead
	}
	ops := make([]ring.Op, qd)
	started := make([]time.Time, qd)
	index := make(map[*ring.Op]int, qd)
	done := make(chan *ring.Op, qd)
	batch := make([]*ring.Op, 0, qd)
	start := time.Now()
	deadline := start.Add(cfg.Duration)
	for i := range ops {
		ops[i] = ring.Op{Kind: kind, Fd: fd, Buf: bufs[i], Off: w.offset()}
		index[&ops[i]] = i
		started[i] = start
		batch = append(batch, &ops[i])
	}
	if err := r.Submit(done, batch...); err != nil {
		return h, 0, 0, err
	}
	var count uint64
	inflight := qd
	prog := newProgress(cfg, rw, qd, start)
	var firstErr error
	for inflight > 0 {
		batch = batch[:0]
		op := <-done
		now := time.Now()
		for {
			inflight--
			i := index[op]
			if op.Err != nil && firstErr == nil {
				firstErr = op.Err
			}
			h.record(now.Sub(started[i]))
			count++
			if now.Before(deadline) && firstErr == nil {
				op.Off = w.offset()
				started[i] = now
				batch = append(batch, op)
			}
			select {
			case op = <-done:
				continue
			default:
			}
			break
		}
		if len(batch) > 0 {
			inflight += len(batch)
			if err := r.Submit(done, batch...); err != nil {
				return h, count, time.Since(start), err
			}
		}
		prog.tick(now, count)
	}
	return h, count, time.Since(start), firstErr
}

// runRingSync is QD goroutines each issuing one synchronous ReadAt/WriteAt
// at a time.
func runRingSync(cfg *Config, r *ring.Ring, fd int, rw string, qd int) (histogram, uint64, time.Duration, error) {
	return runGoroutines(cfg, rw, qd, buffers(r, qd, cfg.BS), func(buf []byte, off int64) error {
		var err error
		if isRead(rw) {
			_, err = r.ReadAt(fd, buf, off)
		} else {
			_, err = r.WriteAt(fd, buf, off)
		}
		return err
	})
}

// runPread is QD goroutines each calling pread/pwrite: the baseline without
// io_uring, and the model of dev/sysdev.
func runPread(cfg *Config, fd int, rw string, qd int) (histogram, uint64, time.Duration, error) {
	return runGoroutines(cfg, rw, qd, buffers(nil, qd, cfg.BS), func(buf []byte, off int64) error {
		for done := 0; done < len(buf); {
			var (
				n   int
				err error
			)
			if isRead(rw) {
				n, err = unix.Pread(fd, buf[done:], off+int64(done))
			} else {
				n, err = unix.Pwrite(fd, buf[done:], off+int64(done))
			}
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return err
			}
			done += n
		}
		return nil
	})
}

func runGoroutines(cfg *Config, rw string, qd int, bufs [][]byte, do func([]byte, int64) error) (histogram, uint64, time.Duration, error) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		total histogram
		count atomic.Uint64
		first error
	)
	start := time.Now()
	deadline := start.Add(cfg.Duration)
	for g := range qd {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var h histogram
			w := newWorkload(cfg, rw, uint64(g+1))
			var err error
			for {
				t0 := time.Now()
				if !t0.Before(deadline) {
					break
				}
				if err = do(bufs[g], w.offset()); err != nil {
					break
				}
				h.record(time.Since(t0))
				count.Add(1)
			}
			mu.Lock()
			total.merge(&h)
			if err != nil && first == nil {
				first = err
			}
			mu.Unlock()
		}()
	}
	if cfg.Progress != nil {
		prog := newProgress(cfg, rw, qd, start)
		for stop := false; !stop; {
			time.Sleep(200 * time.Millisecond)
			now := time.Now()
			stop = !now.Before(deadline)
			prog.tick(now, count.Load())
		}
	}
	wg.Wait()
	return total, count.Load(), time.Since(start), first
}

// runRingLoop is fio's loop run on the ring's own goroutine: every op's
// completion callback records its latency and refills it with a new offset,
// so the ring resubmits it in its next batch with no handoff to another
// goroutine.
func runRingLoop(cfg *Config, r *ring.Ring, fd int, rw string, qd int) (histogram, uint64, time.Duration, error) {
	var (
		h        histogram // touched only by the reactor (callbacks) until finished closes
		count    atomic.Uint64
		first    error
		finished = make(chan struct{})
	)
	bufs := buffers(r, qd, cfg.BS)
	w := newWorkload(cfg, rw, 1)
	kind := ring.OpWrite
	if isRead(rw) {
		kind = ring.OpRead
	}
	type loopOp struct {
		ring.Op
		started time.Time
	}
	ops := make([]loopOp, qd)
	ptrs := make([]*ring.Op, qd)
	byOp := make(map[*ring.Op]*loopOp, qd)
	start := time.Now()
	deadline := start.Add(cfg.Duration)
	outstanding := qd
	for i := range ops {
		ops[i] = loopOp{Op: ring.Op{Kind: kind, Fd: fd, Buf: bufs[i], Off: w.offset()}, started: start}
		ptrs[i] = &ops[i].Op
		byOp[ptrs[i]] = &ops[i]
	}
	then := func(op *ring.Op) bool {
		lo := byOp[op]
		now := time.Now()
		h.record(now.Sub(lo.started))
		count.Add(1)
		if op.Err != nil && first == nil {
			first = op.Err
		}
		if first == nil && now.Before(deadline) {
			op.Off = w.offset()
			lo.started = now
			return true
		}
		if outstanding--; outstanding == 0 {
			close(finished)
		}
		return false
	}
	if err := r.SubmitFunc(then, ptrs...); err != nil {
		return h, 0, 0, err
	}
	prog := newProgress(cfg, rw, qd, start)
	for done := false; !done; {
		select {
		case <-finished:
			done = true
		case now := <-time.After(200 * time.Millisecond):
			prog.tick(now, count.Load())
		}
	}
	return h, count.Load(), time.Since(start), first
}
