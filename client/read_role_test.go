package client

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"
	"time"

	"ustore/proto"
)

// reading reports whether anyone holds c's read role.
func (c *Client) reading() bool {
	cn := c.cur.Load()
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.reading
}

// waitNotReading waits for the read role to be free: a background reader
// ends once nothing is in flight, an event that must happen.
func waitNotReading(t *testing.T, c *Client) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for c.reading() {
		if time.Now().After(deadline) {
			t.Fatal("the read role is still held with nothing to read")
		}
		time.Sleep(time.Millisecond)
	}
}

// answerStats answers n stat requests on fc with their own inode.
func answerStats(fc *fakeConn, n int) {
	for range n {
		fr, req := fc.request()
		fc.respond(fr.ID, proto.OpStat, proto.StatusOK, &proto.Attr{Ino: req.(*proto.Stat).Ino})
	}
}

// statInBackground stats ino on another goroutine; its error, or one for
// an answer that is another call's, comes on the channel.
func statInBackground(c *Client, ino uint64) <-chan error {
	errc := make(chan error, 1)
	go func() {
		a, err := c.Stat(context.Background(), ino)
		if err == nil && a.Ino != ino {
			err = errors.New("another call's answer")
		}
		errc <- err
	}()
	return errc
}

// TestReadRole_DepthOne_NobodyReadsBetweenCalls: one call at a time is
// read by its own caller, and between calls nobody holds the read role (no
// reader goroutine waits on the socket).
func TestReadRole_DepthOne_NobodyReadsBetweenCalls(t *testing.T) {
	f := newFake(t, maxLimits())
	c := f.dial(Options{})
	fc := f.accept()
	go answerStats(fc, 100)
	for i := range 100 {
		a, err := c.Stat(context.Background(), uint64(10+i))
		if err != nil || a.Ino != uint64(10+i) {
			t.Fatalf("call %d: %+v %v", i, a, err)
		}
		if c.reading() {
			t.Fatalf("call %d: the read role is held after the call returned", i)
		}
	}
}

// TestReadRole_LeaderCancelled_HandsOn: the caller reading for others
// gives up (its context ends); a caller still waiting gets its response,
// and the late response of the one that gave up is dropped and its slot
// given back.
func TestReadRole_LeaderCancelled_HandsOn(t *testing.T) {
	for _, late := range []bool{false, true} {
		f := newFake(t, maxLimits())
		c := f.dial(Options{})
		fc := f.accept()
		ctx, cancel := context.WithCancel(context.Background())
		aErr := make(chan error, 1)
		go func() { _, err := c.Stat(ctx, 1); aErr <- err }()
		frA, _ := fc.request()
		// A is the only call in flight: it reads. B waits behind it.
		for !c.reading() {
			time.Sleep(time.Millisecond)
		}
		bRes := statInBackground(c, 2)
		frB, _ := fc.request()
		cancel()
		if err := <-aErr; !errors.Is(err, context.Canceled) {
			t.Fatalf("the cancelled reader: %v", err)
		}
		if late {
			fc.respond(frA.ID, proto.OpStat, proto.StatusOK, &proto.Attr{Ino: 1})
		}
		fc.respond(frB.ID, proto.OpStat, proto.StatusOK, &proto.Attr{Ino: 2})
		if err := <-bRes; err != nil {
			t.Fatalf("the waiting call: %v", err)
		}
		if !late {
			fc.respond(frA.ID, proto.OpStat, proto.StatusOK, &proto.Attr{Ino: 1})
		}
		waitNotReading(t, c)
		if n := len(c.cur.Load().slots); n != 0 {
			t.Fatalf("late=%v: %d slots still taken", late, n)
		}
	}
}

// TestReadRole_Unawaited_SlotsComeBack: calls nobody waits for (sent and
// abandoned, or not yet awaited) fill the in-flight bound; a later call
// still gets a slot, because their responses are read by a background
// reader.
func TestReadRole_Unawaited_SlotsComeBack(t *testing.T) {
	f := newFake(t, proto.Limits{FrameSizeMax: proto.FrameSizeMax, InflightMax: 2})
	c := f.dial(Options{})
	fc := f.accept()
	ctx := context.Background()
	a, err := c.send(ctx, &proto.Stat{Ino: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.send(ctx, &proto.Stat{Ino: 2})
	if err != nil {
		t.Fatal(err)
	}
	c.abandon(a) // given up; b is kept, to be awaited later
	go answerStats(fc, 3)
	got, err := c.Stat(ctx, 3)
	if err != nil || got.Ino != 3 {
		t.Fatalf("the call past the bound: %+v %v", got, err)
	}
	r, err := c.await(ctx, b)
	if err != nil || r.reply.(*proto.Attr).Ino != 2 {
		t.Fatalf("the call awaited late: %+v %v", r.reply, err)
	}
	proto.PutBuffer(r.buf)
	waitNotReading(t, c)
}

// TestReadRole_IdleClose_NextCallRedials: the server closes a connection
// nobody reads (its idle close); the next call's write finds it closed,
// reads the server's reason, and — its frame having reached no one — goes
// on a new connection.
func TestReadRole_IdleClose_NextCallRedials(t *testing.T) {
	f := newFake(t, maxLimits())
	c := f.dial(Options{})
	fc := f.accept()
	go answerStats(fc, 1)
	if _, err := c.Stat(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	b, err := proto.AppendResponse(nil, 0, 0, proto.StatusTimedOut, "idle", nil)
	if err != nil {
		t.Fatal(err)
	}
	fc.nc.Write(b)
	fc.nc.Close()
	errc := statInBackground(c, 7)
	answerStats(f.accept(), 1)
	if err := <-errc; err != nil {
		t.Fatalf("the call after the idle close: %v", err)
	}
	if n := c.Reconnects(); n != 1 {
		t.Fatalf("%d reconnects, want 1", n)
	}
}

// TestReadRole_Shutdown_SeenByErr: with no call in flight nobody reads,
// yet Err reports the server's shutdown without a call.
func TestReadRole_Shutdown_SeenByErr(t *testing.T) {
	f := newFake(t, maxLimits())
	c := f.dial(Options{})
	fc := f.accept()
	if err := c.Err(); err != nil {
		t.Fatalf("Err on a live connection: %v", err)
	}
	b, err := proto.AppendResponse(nil, 0, 0, proto.StatusShutdown, "stopping", nil)
	if err != nil {
		t.Fatal(err)
	}
	fc.nc.Write(b)
	fc.nc.Close()
	deadline := time.Now().Add(10 * time.Second)
	for c.Err() == nil {
		if time.Now().After(deadline) {
			t.Fatal("Err never saw the server's shutdown")
		}
		time.Sleep(time.Millisecond)
	}
	if err := c.Err(); !errors.Is(err, syscall.ESHUTDOWN) {
		t.Fatalf("Err: %v, want ESHUTDOWN", err)
	}
	if _, err := c.Stat(context.Background(), 1); !errors.Is(err, syscall.ESHUTDOWN) {
		t.Fatalf("a call after the shutdown: %v", err)
	}
}

// TestReadRole_Concurrent_RandomCancels: many callers on one connection,
// the fake answering out of order after random delays, a third of the
// calls given up part way: every answer that arrives is its own caller's,
// nothing hangs, and every slot comes back.
func TestReadRole_Concurrent_RandomCancels(t *testing.T) {
	f := newFake(t, proto.Limits{FrameSizeMax: proto.FrameSizeMax, InflightMax: 8})
	c := f.dial(Options{})
	fc := f.accept()
	const callers, calls = 12, 300
	stop := make(chan struct{})
	var fakeWG sync.WaitGroup
	fakeWG.Go(func() {
		rng := rand.New(rand.NewPCG(1, 2))
		var held []proto.Frame
		var inos []uint64
		answer := func(i int) {
			fc.respond(held[i].ID, proto.OpStat, proto.StatusOK, &proto.Attr{Ino: inos[i]})
			held = append(held[:i], held[i+1:]...)
			inos = append(inos[:i], inos[i+1:]...)
		}
		for {
			fc.nc.SetReadDeadline(time.Now().Add(time.Millisecond))
			if _, err := fc.br.Peek(1); err == nil {
				fr, req := fc.request()
				held, inos = append(held, fr), append(inos, req.(*proto.Stat).Ino)
			}
			for len(held) > 0 && (len(held) >= 4 || rng.IntN(3) == 0) {
				answer(rng.IntN(len(held)))
			}
			select {
			case <-stop:
				for len(held) > 0 {
					answer(0)
				}
				return
			default:
			}
		}
	})
	var wg sync.WaitGroup
	var mu sync.Mutex
	gaveUp := 0
	errs := make(chan error, callers)
	for g := range callers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for i := range calls {
				ino := uint64(g*1_000_000 + i + 1)
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if rng.IntN(3) == 0 {
					ctx, cancel = context.WithTimeout(context.Background(), time.Duration(rng.IntN(400))*time.Microsecond)
				}
				a, err := c.Stat(ctx, ino)
				cancel()
				switch {
				case err == nil && a.Ino != ino:
					errs <- errors.New("a call got another call's answer")
					return
				case err != nil && !errors.Is(err, context.DeadlineExceeded):
					errs <- err
					return
				case err != nil:
					mu.Lock()
					gaveUp++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	fakeWG.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d of %d calls gave up", gaveUp, callers*calls)
	waitNotReading(t, c)
	if n := len(c.cur.Load().slots); n != 0 {
		t.Fatalf("%d slots still taken", n)
	}
}

type slowTraceKey struct{}

// TestReadRole_SentNotAwaited_Read: a call sent for a later await (a
// write-behind write, a stream chunk) has its response read meanwhile, so
// that its slot comes back: here it holds the only slot, registered late
// (user code between the slot and the registration), and another call
// waits for that slot.
func TestReadRole_SentNotAwaited_Read(t *testing.T) {
	f := newFake(t, proto.Limits{FrameSizeMax: proto.FrameSizeMax, InflightMax: 1})
	c := f.dial(Options{Traceparent: func(ctx context.Context) string {
		if ctx.Value(slowTraceKey{}) != nil {
			time.Sleep(50 * time.Millisecond)
		}
		return ""
	}})
	fc := f.accept()
	go answerStats(fc, 2)
	sent := make(chan *call, 1)
	go func() {
		cl, err := c.send(context.WithValue(context.Background(), slowTraceKey{}, 1), &proto.Stat{Ino: 1})
		if err != nil {
			t.Error(err)
		}
		sent <- cl
	}()
	time.Sleep(10 * time.Millisecond) // the send above holds the slot
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Stat(ctx, 2); err != nil {
		t.Fatalf("the call waiting for the slot: %v", err)
	}
	cl := <-sent
	r, err := c.await(context.Background(), cl)
	if err != nil || r.reply.(*proto.Attr).Ino != 1 {
		t.Fatalf("the call awaited late: %+v %v", r.reply, err)
	}
	proto.PutBuffer(r.buf)
}

// TestReadRole_Waiters_Bounded: while one caller reads (its reply slow),
// thousands of calls wait behind it one after another; the list of
// waiters stays bounded by those still waiting, not by the calls made.
func TestReadRole_Waiters_Bounded(t *testing.T) {
	f := newFake(t, maxLimits())
	c := f.dial(Options{})
	fc := f.accept()
	slow := make(chan error, 1)
	go func() { _, err := c.Stat(context.Background(), 1); slow <- err }()
	frA, _ := fc.request()
	for !c.reading() {
		time.Sleep(time.Millisecond)
	}
	const calls = 5000
	go answerStats(fc, calls)
	for i := range calls {
		if _, err := c.Stat(context.Background(), uint64(2+i)); err != nil {
			t.Fatal(err)
		}
	}
	cn := c.cur.Load()
	cn.mu.Lock()
	n, waiting := len(cn.waiters), cn.nWaiting
	cn.mu.Unlock()
	if waiting != 0 || n > 16 {
		t.Fatalf("%d entries in waiters (%d waiting) after %d calls behind one reader", n, waiting, calls)
	}
	fc.respond(frA.ID, proto.OpStat, proto.StatusOK, &proto.Attr{Ino: 1})
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
}
