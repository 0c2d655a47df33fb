package store

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"ustore/dev"
	"ustore/dev/memdev"
)

// The log's delta records (logtree/delta.go, engine/log_chain.go) under
// power cuts: the general harness runs them by default (most syncs are
// deltas there); these cases cross checkpoints on purpose and tear deltas.

// TestCrash_WorkloadsLogCheckpoints: a sample of the crash workloads run
// with a log checkpoint after every delta record (delta, checkpoint,
// delta, …: each workload's syncs cross from one to the other) and with
// every sync a checkpoint (the ablation), every crash point checked as in
// TestCrash_Workloads.
func TestCrash_WorkloadsLogCheckpoints(t *testing.T) {
	start := time.Now()
	base, m0 := crashBase(t)
	rng := rand.New(rand.NewPCG(20261204, 1))
	var two []crashWorkload
	crashEnumerate(m0, 2, func(w crashWorkload) { two = append(two, w) })
	rng.Shuffle(len(two), func(i, j int) { two[i], two[j] = two[j], two[i] })
	n2, n3 := 120, 80
	if raceEnabled() {
		n2, n3 = 30, 20
	}
	ws := append([]crashWorkload(nil), two[:n2]...)
	ws = append(ws, crashRegressions...)
	for range n3 {
		ws = append(ws, crashRandom(rng, m0, 3))
	}
	for _, mode := range []struct {
		name string
		opts Options
	}{
		{"checkpoint-after-each-delta", func() Options { o := crashOptions(); o.LogDeltaRun = 1; return o }()},
		{"nodes-every-sync", crashOptionsNodes()},
	} {
		t.Run(mode.name, func(t *testing.T) {
			cases := crashCheckWorkloads(t, ws, 9, func(w crashWorkload) (*crashRun, error) {
				return crashRunWorkloadWith(base, m0, w, mode.opts, nil)
			})
			t.Logf("%d workloads, %d crash points checked, %v", len(ws), cases, time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestLogChain_Crash_DeltaTorn: the newest log sync's record, a delta, is
// torn — a power cut in the middle of its sectors — after syncs that were
// deltas, a checkpoint, or both. Replay must end the chain before it and
// apply the record before: the file holds what the last completed fsync
// logged, and nothing of the torn one.
func TestLogChain_Crash_DeltaTorn(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deltaRun int
		syncs    int // completed before the torn one
	}{
		{"first-delta", 0, 0},
		{"after-deltas", 0, 3},
		{"after-a-checkpoint", 1, 2},         // delta, checkpoint, then the torn delta
		{"after-checkpoint-and-delta", 2, 4}, // delta, delta, checkpoint, delta, the torn one
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			d := newTestDevice(t, 64<<20)
			opts := crashOptions()
			opts.LogDeltaRun = tc.deltaRun
			s := openTest(t, d, opts)
			want := crashData(1, 0, 3*blockSize)
			ino := lcCommittedFile(t, s, want)
			write := func(step int) []byte {
				v := bytes.Clone(want)
				copy(v[(step%3)*blockSize:], crashData(step, 0, blockSize+100))
				if _, err := s.Write(ino, 0, v); err != nil {
					t.Fatal(err)
				}
				return v
			}
			for i := range tc.syncs {
				want = write(2 + i)
				if err := s.Fsync(ctx, ino, false); err != nil {
					t.Fatal(err)
				}
			}
			write(9)
			if err := s.Fsync(ctx, ino, false); err != nil {
				t.Fatal(err)
			}
			est := s.e.Stats()
			if st := s.Stats(); st.FsyncLogged != uint64(tc.syncs+1) {
				t.Fatalf("%d fsyncs logged, want %d (fallbacks %v)", st.FsyncLogged, tc.syncs+1, st.FsyncFallbacks)
			}
			ops := d.Ops() // before the reads below
			recs := lcLogChain(t, d)
			if len(recs) != tc.syncs+1 {
				t.Fatalf("log chain of %d records after %d syncs", len(recs), tc.syncs+1)
			}
			// The torn record: the newest, a delta — its first sector
			// written, its checksum then not matching (a byte of its
			// payload lost).
			flush := ops[len(ops)-1]
			if flush.Kind != memdev.OpFlush {
				t.Fatalf("the fsync ended with %v, not its flush", flush.Kind)
			}
			newest := recs[len(recs)-1]
			rec := lcRead(t, d, int64(newest.at), 4096)
			if rec[lcRecKind] != 1 {
				t.Fatalf("the newest record is of kind %d, not a delta (%d deltas of %d syncs)", rec[lcRecKind], est.LogDeltas, est.LogSyncs)
			}
			c := d.CrashAt(flush.Seq-1, memdev.KeepAll())
			s.Close(ctx)
			rec[lcRecPayload+5] ^= 0x40
			if err := c.WriteDurable([]dev.IO{{Off: int64(newest.at), Buf: rec}}); err != nil {
				t.Fatal(err)
			}
			s2, err := Open(c, crashOptions())
			if err != nil {
				t.Fatal(err)
			}
			rep := s2.Replay()
			t.Logf("replay: %+v; %d deltas of %d syncs", rep, est.LogDeltas, est.LogSyncs)
			if rep.Lost != nil || rep.Applied != (tc.syncs > 0) {
				t.Fatalf("replay: %+v; want applied %v (the record before the torn one), nothing lost", rep, tc.syncs > 0)
			}
			if got, ok := lcContent(t, s2, RootIno, "f"); !ok || !bytes.Equal(got, want) {
				t.Fatalf("f: present %v, %d bytes (%s); want the content of the last completed sync", ok, len(got), lcDiff(got, want))
			}
			closeCheck(t, s2)
		})
	}
}

// lcDiff says where got first differs from want.
func lcDiff(got, want []byte) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("first difference at byte %d", i)
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(got), len(want))
}
