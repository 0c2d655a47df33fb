//go:build linux && amd64

package ebpf

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"ustore/client"
	"ustore/dev/memdev"
	"ustore/internal/jaegertest"
	"ustore/lock"
	"ustore/server"
	"ustore/store"
	"ustore/trace"
)

// TestProbes_LockWaitEvents_Jaeger: a contention storm on one leaf (the
// fs tree's leaves: creates in sibling directories) through a real server
// gives lock-wait samples for that tree and level, and a lock wait that
// BPF reports through the ring buffer becomes a lock.wait event (or child
// span) of the waiting request's span, which the real Jaeger returns with
// the lock's class, mode, id and wait.
//
// The storm runs until BPF has reported one wait joined to a request (the
// threshold is 1 ns, so any contended acquisition of a request counts);
// contention is a matter of scheduling, so the test waits for it instead
// of expecting it by a deadline (the deadline only bounds a broken build).
func TestProbes_LockWaitEvents_Jaeger(t *testing.T) {
	j := jaegertest.Start(t)
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(j.OTLPEndpoint()+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "ustore"))))
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_ = tp.Shutdown(sctx)
	}()
	defer trace.UseTracerProvider(tp)()
	defer trace.SetSpanBinding(true)()

	joined := make(chan WaitEvent, 1)
	p := attachAll(t, Config{WaitThreshold: time.Nanosecond, OnWait: func(ev WaitEvent) {
		if ev.Joined != "" && lock.KindName(ev.Kind) == "fs.level0" {
			select {
			case joined <- ev:
			default:
			}
		}
	}})

	d := memdev.New(256 << 20)
	if err := store.Mkfs(d, store.MkfsOptions{}); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(d, store.Options{CommitInterval: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(ctx)
	sock := filepath.Join(t.TempDir(), "s.sock")
	srv, err := server.New(st, server.Options{Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		<-served
	}()

	const workers = 8
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		c, err := client.Dial(ctx, sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// A directory per worker: the store serialises the creates of one
		// directory (its inode lock) before they reach the tree, while
		// creates in sibling directories meet in the same fs leaf.
		dir, err := c.Mkdir(ctx, client.RootIno, fmt.Sprintf("w%d", w), 0o755)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				if _, err := c.Create(ctx, dir.Ino, fmt.Sprintf("f%d", i), 0o644); err != nil {
					errs <- err
					return
				}
				// Keep 64 files a worker: the storm runs until contention
				// shows, however long, so it must not fill the device.
				if i >= 64 {
					if err := c.Unlink(ctx, dir.Ino, fmt.Sprintf("f%d", i-64)); err != nil {
						errs <- err
						return
					}
				}
				if _, err := c.Stat(ctx, client.RootIno); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var ev WaitEvent
	select {
	case ev = <-joined:
	case err := <-errs:
		t.Fatalf("storm: %v", err)
	case <-time.After(2 * time.Minute):
		hs, _ := p.LockWaits()
		st, _ := p.Stats()
		t.Fatalf("no contended wait of a request on fs.level0 in 2 minutes (BPF saw kinds %v; stats %+v)", kindsOf(hs), st)
	}
	stop.Store(true)
	wg.Wait()

	hs, err := p.LockWaits()
	if err != nil {
		t.Fatal(err)
	}
	fsLeaf := lock.NodeKind(5, 0)
	if n := hs[fsLeaf].Count() + hs[fsLeaf|lock.KindWrite].Count(); n == 0 {
		t.Fatalf("no BPF lock-wait sample for fs level 0 (kinds seen: %v)", kindsOf(hs))
	}
	if ev.LockID == 0 || ev.Wait <= 0 || ev.TraceID == "" {
		t.Fatalf("event %+v: want a lock id (bytenr), a wait and a trace", ev)
	}

	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := tp.ForceFlush(fctx); err != nil {
		t.Fatal(err)
	}
	qctx, qcancel := context.WithTimeout(ctx, 30*time.Second)
	defer qcancel()
	tr, err := j.WaitTrace(qctx, ev.TraceID)
	if err != nil {
		t.Fatal(err)
	}
	// The request may have waited on several locks (the root pointer, an
	// upper node): find the wait BPF reported, by its lock id and class.
	var attrs map[string]string
	mine := func(a map[string]string) bool {
		return a["ustore.lock.id"] == fmt.Sprint(ev.LockID) && a["ustore.lock.class"] == "fs.level0"
	}
	for _, s := range tr.Spans {
		if ev.Joined == JoinedChildSpan && s.Name == "lock.wait" && s.Parent != nil && mine(s.Attributes) {
			attrs = s.Attributes
		}
		for _, e := range s.Events {
			if ev.Joined == JoinedSpanEvent && e.Name == "lock.wait" && mine(e.Attributes) {
				attrs = e.Attributes
				if e.Time.Before(s.Start) || e.Time.After(s.End) {
					t.Errorf("lock.wait at %v outside its span %s [%v, %v]", e.Time, s.Name, s.Start, s.End)
				}
			}
		}
	}
	if attrs == nil {
		t.Fatalf("Jaeger's trace %s has no lock.wait (%s):\n%s", ev.TraceID, ev.Joined, tr)
	}
	want := map[string]string{
		"ustore.lock.class": "fs.level0",
		"ustore.lock.tree":  "5",
		"ustore.lock.level": "0",
		"ustore.lock.id":    fmt.Sprint(ev.LockID),
	}
	for k, v := range want {
		if attrs[k] != v {
			t.Errorf("lock.wait %s = %q, want %q (all: %v)", k, attrs[k], v, attrs)
		}
	}
	if m := attrs["ustore.lock.mode"]; m != "read" && m != "write" {
		t.Errorf("lock.wait mode %q", m)
	}
	t.Logf("%s wait of %v on %s joined as %s:\n%s", attrs["ustore.lock.mode"], ev.Wait, attrs["ustore.lock.class"], ev.Joined, tr)
}

func kindsOf(hs map[uint32]Hist) []string {
	var out []string
	for k, h := range hs {
		out = append(out, fmt.Sprintf("%s/%#x:%d", lock.KindName(k), k, h.Count()))
	}
	return out
}
