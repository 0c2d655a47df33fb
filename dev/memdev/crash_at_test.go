package memdev

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"

	"ustore/dev"
)

// modelState is what the test expects a crash at one point to choose from:
// the durable byte of each sector and the unflushed writes.
type modelState struct {
	durable []byte
	pending []modelWrite
}

type modelWrite struct {
	first, n int // sectors
	c        byte
}

// TestDevice_CrashAt_EveryPoint runs a seeded workload of writes, batches,
// reads, flushes and injected failures while keeping its own model of the
// durable data and of the unflushed writes after every operation. Then, at
// every point of the history — each flush and everything between — it
// checks UnflushedAt against the model and CrashAt under KeepNone, KeepAll,
// every subset (when few) and a tear. Finally, Crash agrees with
// CrashAt(Seq()) (Invariant 3).
func TestDevice_CrashAt_EveryPoint(t *testing.T) {
	const sectors = 16
	seed := uint64(11)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	d := New(sectors * s)

	cur := modelState{durable: make([]byte, sectors)}
	states := []modelState{{durable: make([]byte, sectors)}} // states[seq]
	snapshot := func() {
		states = append(states, modelState{
			durable: bytes.Clone(cur.durable),
			pending: append([]modelWrite(nil), cur.pending...),
		})
	}
	nextByte := byte(1)
	newWrite := func() (modelWrite, dev.IO) {
		w := modelWrite{first: rng.IntN(sectors - 1), n: 1 + rng.IntN(2), c: nextByte}
		nextByte++
		return w, dev.IO{Off: int64(w.first) * s, Buf: filled(w.n*s, w.c)}
	}
	for range 60 {
		switch r := rng.IntN(10); {
		case r < 5: // a batch of one or two writes, maybe one failing
			var ws []modelWrite
			var ios []dev.IO
			for range 1 + rng.IntN(2) {
				w, io := newWrite()
				ws, ios = append(ws, w), append(ios, io)
			}
			failing := -1
			if rng.IntN(5) == 0 {
				failing = rng.IntN(len(ios))
				d.InjectError(OpWrite, failing+1, syscall.EIO)
			}
			err := d.Write(ios)
			if (err != nil) != (failing >= 0) {
				t.Fatalf("Write: %v with failing io %d", err, failing)
			}
			for i, w := range ws {
				if i != failing {
					cur.pending = append(cur.pending, w)
				}
				snapshot()
			}
		case r < 7:
			read(t, d, int64(rng.IntN(sectors))*s, s)
			snapshot()
		default:
			fail := rng.IntN(4) == 0
			if fail {
				d.InjectError(OpFlush, 1, syscall.EIO)
			}
			if err := d.Flush(); (err != nil) != fail {
				t.Fatalf("Flush: %v, injected %v", err, fail)
			}
			if !fail {
				for _, w := range cur.pending {
					for i := w.first; i < w.first+w.n; i++ {
						cur.durable[i] = w.c
					}
				}
				cur.pending = nil
			}
			snapshot()
		}
	}
	if uint64(len(states)-1) != d.Seq() {
		t.Fatalf("model has %d states, device Seq is %d", len(states)-1, d.Seq())
	}

	expect := func(st modelState, keep func(i int) bool) []byte {
		img := bytes.Clone(st.durable)
		for i, w := range st.pending {
			if keep(i) {
				for j := w.first; j < w.first+w.n; j++ {
					img[j] = w.c
				}
			}
		}
		return img
	}
	for seq, st := range states {
		u := d.UnflushedAt(uint64(seq))
		if len(u) != len(st.pending) {
			t.Fatalf("seq %d: UnflushedAt has %d writes, model %d", seq, len(u), len(st.pending))
		}
		for i, w := range u {
			m := st.pending[i]
			if w.Off != int64(m.first)*s || len(w.Data) != m.n*s || w.Data[0] != m.c {
				t.Fatalf("seq %d: unflushed %d = off %d len %d byte %#x, model %+v", seq, i, w.Off, len(w.Data), w.Data[0], m)
			}
		}
		check := func(p CrashPolicy, keep func(int) bool, what string) {
			t.Helper()
			got := sectorBytes(t, d.CrashAt(uint64(seq), p), sectors)
			if want := expect(st, keep); !bytes.Equal(got, want) {
				t.Fatalf("seq %d %s: crash = %v, model %v", seq, what, got, want)
			}
		}
		check(KeepNone(), func(int) bool { return false }, "KeepNone")
		check(KeepAll(), func(int) bool { return true }, "KeepAll")
		if len(st.pending) <= 4 {
			for mask := range uint64(1) << len(st.pending) {
				check(KeepSubset(mask), func(i int) bool { return mask&(1<<i) != 0 }, fmt.Sprintf("subset %b", mask))
			}
		}
		if n := len(st.pending); n > 0 {
			// Tear the newest write keeping no piece: as if it was lost.
			p := KeepAll()
			p.Tear = &Tear{Index: n - 1}
			check(p, func(i int) bool { return i != n-1 }, "KeepAll, newest torn to nothing")
		}
	}
	for _, p := range []CrashPolicy{KeepNone(), KeepAll(), KeepSubset(0b1010)} {
		if a, b := sectorBytes(t, d.Crash(p), sectors), sectorBytes(t, d.CrashAt(d.Seq(), p), sectors); !bytes.Equal(a, b) {
			t.Errorf("Crash = %v, CrashAt(Seq()) = %v", a, b)
		}
	}
}

func TestDevice_CrashAt_PastEndPanics(t *testing.T) {
	d := New(4 * s)
	write(t, d, 0, s, 1)
	defer func() {
		if recover() == nil {
			t.Error("CrashAt(Seq()+1) did not panic")
		}
	}()
	d.CrashAt(d.Seq()+1, KeepAll())
}
