package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"ustore/dev/memdev"
	"ustore/journal"
)

// TestEngine_Crash_AllOrNothing runs random operations and commits on a
// memdev, then cuts power at every flush and at points between flushes —
// keeping no, all, or a random subset of the unflushed writes, or tearing
// one — and mounts what is left. The tree must be exactly the state of one
// commit (all of a transaction or none of it), never older than the last
// commit that had finished before the cut, and fsck must be clean.
func TestEngine_Crash_AllOrNothing(t *testing.T) {
	seed := uint64(rand.Int64())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	d := memdev.New(64 << 20)
	if err := Mkfs(d, MkfsOptions{NodeSize: 4096}); err != nil {
		t.Fatal(err)
	}
	e := mount(t, d)
	snapshots := map[journal.Transid]model{1: nil} // generation → the test tree then (nil: no tree)
	durableAt := map[journal.Transid]uint64{1: d.Seq()}
	tr, _ := e.Start()
	if _, err := e.CreateTree(tr, testTree); err != nil {
		t.Fatal(err)
	}
	tr.End()
	m := model{}
	for round := 0; round < 12; round++ {
		tr, err := e.Start()
		if err != nil {
			t.Fatal(err)
		}
		randomOps(t, rng, tr, e.Tree(testTree), m, 150+rng.IntN(300), 1500, 300)
		tr.End()
		gen := commitGen(t, e)
		snapshots[gen] = m.clone()
		durableAt[gen] = d.Seq()
	}
	closeEngine(t, e)

	// Crash points: every flush, and a few writes between flushes.
	var points []uint64
	for _, op := range d.Ops() {
		if op.Seq < durableAt[1] {
			continue // mkfs itself: not a filesystem yet
		}
		if op.Kind == memdev.OpFlush || rng.IntN(4) == 0 {
			points = append(points, op.Seq)
		}
	}
	cases := 0
	for _, seq := range points {
		for variant := 0; variant < 4; variant++ {
			policy := memdev.KeepNone()
			switch variant {
			case 1:
				policy = memdev.KeepAll()
			case 2:
				policy = memdev.KeepRandom(rng)
			case 3:
				policy = memdev.KeepRandom(rng)
				if n := len(d.UnflushedAt(seq)); n > 0 {
					i := rng.IntN(n)
					w := d.UnflushedAt(seq)[i]
					policy.Tear = &memdev.Tear{Index: i, Pieces: memdev.RandomPieces(rng, w.Pieces())}
				}
			}
			crashed := d.CrashAt(seq, policy)
			name := fmt.Sprintf("seq %d variant %d", seq, variant)
			ce, err := Mount(crashed, Options{Logger: quiet()})
			if err != nil {
				t.Fatalf("%s: mount after crash: %v", name, err)
			}
			gen := ce.sb.Generation
			want, ok := snapshots[gen]
			if !ok {
				t.Fatalf("%s: mounted generation %d, which no commit produced", name, gen)
			}
			for g, at := range durableAt {
				if at <= seq && g > gen {
					t.Fatalf("%s: mounted generation %d, but generation %d was durable at op %d", name, gen, g, at)
				}
			}
			if want == nil {
				if ce.Tree(testTree) != nil {
					t.Fatalf("%s: generation %d has the test tree", name, gen)
				}
			} else {
				compareTree(t, ce.Tree(testTree), want)
			}
			if err := Check(ce).Err(); err != nil {
				t.Fatalf("%s: fsck after crash: %v", name, err)
			}
			if err := ce.Close(t.Context()); err != nil {
				t.Fatalf("%s: close: %v", name, err)
			}
			cases++
		}
	}
	t.Logf("%d crash cases over %d crash points", cases, len(points))
}

func commitGen(t *testing.T, e *Engine) journal.Transid {
	t.Helper()
	gen, err := e.Commit(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return gen
}
