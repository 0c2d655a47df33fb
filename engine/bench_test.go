package engine

// The engine's benchmarks, run by hand (bench/engine-vs-bbolt.sh runs them
// all and docs/BENCHMARKS.md records the figures):
//
//   - BenchmarkEngineVsBbolt_Insert, _Lookup: random 16-byte keys with
//     100-byte values into ustore (io_uring, O_DIRECT, 16 KiB nodes) and into
//     bbolt (default options, fsync on) in the same directory, in the same
//     run, rotating which goes first, one durable commit per 10,000 inserts
//     in both; each reports the rates and their ratios. ustore runs twice:
//     waiting for each commit, as bbolt must, and pipelining them.
//   - BenchmarkInsertItems_DirIndex: 250 consecutive dir-index items per
//     InsertItems call against the same items one InsertItem at a time.
//   - BenchmarkCommit_DirtyNodes: Engine.Commit of 100, 1,000 and 10,000
//     dirty leaves on refDevice (CPU only) and on uringdev (CPU + I/O),
//     split into its phases from the engine's "engine: committed" debug
//     line.
//
// The file is long (about 1,000 lines) because the four benchmarks share
// their stores, devices and log handler, which nothing else uses.
//
// Each iteration of the first three is a whole fixed workload, so
// -benchtime=Nx chooses the repetitions; the commit benchmark's iteration is
// one commit. Setup (formatting, opening, checking) is outside the timer.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"ustore/dev"
	"ustore/dev/memdev"
	"ustore/dev/uringdev"
)

var benchKeyCount = flag.Int("engine.bench.keys", 200_000,
	"keys inserted (and looked up) by BenchmarkEngineVsBbolt_*")

var benchNoLeafPush = flag.Bool("engine.bench.no-leaf-push", false,
	"mount the ustore engines of the benchmarks with Options.NoLeafPush (the ablation of push.go)")

const (
	benchValueSize   = 100
	benchCommitEvery = 10_000 // inserts per commit, both engines
	benchNodeSize    = 16 << 10
	benchDeviceSize  = 4 << 30 // sparse: only what is written takes space
	benchTreeID      = 400
)

var benchBucket = []byte("bench")

// benchData is the workload of the bbolt comparison: n distinct random
// 16-byte keys in insertion order, and a 100-byte value for each.
type benchData struct {
	keys   [][16]byte
	values []byte // value i is values[i*benchValueSize:][:benchValueSize]
}

func newBenchData(n int, seed uint64) *benchData {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	seen := make(map[[16]byte]struct{}, n)
	d := &benchData{keys: make([][16]byte, 0, n), values: make([]byte, n*benchValueSize)}
	for len(d.keys) < n {
		var k [16]byte
		binary.LittleEndian.PutUint64(k[:8], rng.Uint64())
		binary.LittleEndian.PutUint64(k[8:], rng.Uint64())
		if _, dup := seen[k]; dup {
			continue
		}
		seen[k] = struct{}{}
		d.keys = append(d.keys, k)
	}
	for i := range d.values {
		d.values[i] = byte(rng.Uint32())
	}
	return d
}

func (d *benchData) value(i int) []byte {
	return d.values[i*benchValueSize : (i+1)*benchValueSize : (i+1)*benchValueSize]
}

// engineKey maps a 16-byte key onto a Key in the same order: ObjectID is
// the first 8 bytes, Offset the next 8, both big-endian.
func engineKey(k [16]byte) Key {
	return Key{ObjectID: binary.BigEndian.Uint64(k[:8]), Type: TypeTest, Offset: binary.BigEndian.Uint64(k[8:])}
}

// benchStore is one engine under comparison.
type benchStore interface {
	// insert inserts keys[lo:hi] with writers goroutines, one commit per
	// benchCommitEvery inserts.
	insert(d *benchData, lo, hi, writers int) error
	close() error
}

// splitRound cuts round [lo, hi) into writers nearly equal parts.
func splitRound(lo, hi, writers int) [][2]int {
	parts := make([][2]int, 0, writers)
	n := hi - lo
	for w := range writers {
		a, b := lo+n*w/writers, lo+n*(w+1)/writers
		if a < b {
			parts = append(parts, [2]int{a, b})
		}
	}
	return parts
}

// runParts runs fn for each part on its own goroutine and returns the
// first error.
func runParts(parts [][2]int, fn func(lo, hi int) error) error {
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Go(func() { errs[i] = fn(p[0], p[1]) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ustoreStore: a tree on uringdev (O_DIRECT), committed explicitly only —
// the commit interval and the dirty-bytes trigger are set out of reach, so
// that both engines make exactly one durable commit per benchCommitEvery
// inserts.
type ustoreStore struct {
	d    dev.Device
	e    *Engine
	tree *Tree
	// pipelined: insert lets the next round run beside a round's commit.
	pipelined bool
	// commitWall sums the wall time insert waits for commits (when not
	// pipelined).
	commitWall time.Duration
}

func openUstoreBench(b *testing.B, path string) *ustoreStore {
	b.Helper()
	d, err := uringdev.Open(path, uringdev.Options{Size: benchDeviceSize, Logger: quiet()})
	if err != nil {
		b.Fatalf("uringdev: %v (the comparison is defined on io_uring)", err)
	}
	if !strings.Contains(d.Backend(), "O_DIRECT") {
		b.Fatalf("uringdev opened %s without O_DIRECT: %s", path, d.Backend())
	}
	if err := Mkfs(d, MkfsOptions{NodeSize: benchNodeSize}); err != nil {
		b.Fatal(err)
	}
	e, err := Mount(d, Options{Logger: quiet(), CommitInterval: 5 * time.Minute, DirtyBytesMax: 8 << 30, NoLeafPush: *benchNoLeafPush})
	if err != nil {
		b.Fatal(err)
	}
	tr, err := e.Start()
	if err != nil {
		b.Fatal(err)
	}
	tree, err := e.CreateTree(tr, benchTreeID)
	tr.End()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e.Commit(context.Background()); err != nil {
		b.Fatal(err)
	}
	return &ustoreStore{d: d, e: e, tree: tree}
}

// benchHandleInserts is how many inserts a writer makes under one
// transaction handle: a commit waits for the open handles, so they are
// short, as a file system operation's.
const benchHandleInserts = 100

// insert: each round's writers insert their shares, handle by handle, then
// the round commits and the next round waits for it. When s.pipelined, the
// next round runs while the commit is in flight instead (the engine's
// transaction t+1 runs beside t's commit; the journal takes the handles
// opened after the commit was asked for into t+1 except for the few that
// race with it); a round's commit still waits for the previous one, so
// there is one commit per round and at most one in flight, and the last
// one is waited for.
func (s *ustoreStore) insert(data *benchData, lo, hi, writers int) error {
	var inflight chan error // the previous round's commit
	wait := func() error {
		if inflight == nil {
			return nil
		}
		err := <-inflight
		inflight = nil
		return err
	}
	for r := lo; r < hi; r += benchCommitEvery {
		parts := splitRound(r, min(r+benchCommitEvery, hi), writers)
		err := runParts(parts, func(a, b int) error {
			for c := a; c < b; c += benchHandleInserts {
				tr, err := s.e.Start()
				if err != nil {
					return err
				}
				for i := c; i < min(c+benchHandleInserts, b); i++ {
					if err := s.tree.InsertItem(tr, engineKey(data.keys[i]), data.value(i)); err != nil {
						tr.End()
						return fmt.Errorf("ustore insert %d: %w", i, err)
					}
				}
				tr.End()
			}
			return nil
		})
		if err != nil {
			return errors.Join(err, wait())
		}
		start := time.Now()
		if err := wait(); err != nil {
			return err
		}
		inflight = make(chan error, 1)
		go func(done chan<- error) {
			_, err := s.e.Commit(context.Background())
			done <- err
		}(inflight)
		if !s.pipelined {
			err = wait()
			s.commitWall += time.Since(start)
			if err != nil {
				return err
			}
		}
	}
	return wait()
}

// lockWait sums the tree's node lock waits since mount, all levels.
func (s *ustoreStore) lockWait() time.Duration {
	var ns uint64
	for _, c := range s.tree.classes {
		ns += c.Snapshot().WaitNanos
	}
	return time.Duration(ns)
}

// writtenBytes is what the engine wrote since mount: nodes and superblocks.
func (s *ustoreStore) writtenBytes() uint64 {
	st := s.e.Stats()
	return st.NodesWritten*uint64(s.e.NodeSize()) + st.Commits*superSize
}

func (s *ustoreStore) lookup(data *benchData, order []int) error {
	for _, i := range order {
		v, err := s.tree.Lookup(engineKey(data.keys[i]))
		if err != nil {
			return fmt.Errorf("ustore lookup %d: %w", i, err)
		}
		if !bytes.Equal(v, data.value(i)) {
			return fmt.Errorf("ustore lookup %d: wrong value", i)
		}
	}
	return nil
}

func (s *ustoreStore) check() error { return Check(s.e).Err() }

func (s *ustoreStore) close() error {
	return errors.Join(s.e.Close(context.Background()), s.d.Close())
}

// boltStore: bbolt with default options (NoSync false: every Update
// fsyncs). With one writer a round is one Update. With several, bbolt has
// one writer at a time, so the round's writers hand their shares to
// db.Batch, which runs them one after the other in one transaction — one
// fsync per round, as ustore. MaxBatchSize is the writer count so that the
// batch starts when the last share arrives rather than after
// MaxBatchDelay's 10 ms of idling.
type boltStore struct{ db *bolt.DB }

func openBoltBench(b *testing.B, path string) *boltStore {
	b.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(benchBucket)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return &boltStore{db: db}
}

func (s *boltStore) insert(data *benchData, lo, hi, writers int) error {
	s.db.MaxBatchSize = writers
	for r := lo; r < hi; r += benchCommitEvery {
		parts := splitRound(r, min(r+benchCommitEvery, hi), writers)
		put := func(a, b int) func(tx *bolt.Tx) error {
			return func(tx *bolt.Tx) error {
				bk := tx.Bucket(benchBucket)
				for i := a; i < b; i++ {
					if err := bk.Put(data.keys[i][:], data.value(i)); err != nil {
						return fmt.Errorf("bbolt put %d: %w", i, err)
					}
				}
				return nil
			}
		}
		var err error
		if writers == 1 {
			err = s.db.Update(put(parts[0][0], parts[0][1]))
		} else {
			err = runParts(parts, func(a, b int) error { return s.db.Batch(put(a, b)) })
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// lookupEach opens a read transaction per lookup: the unit of a point read,
// as ustore's Lookup, which needs none.
func (s *boltStore) lookupEach(data *benchData, order []int) error {
	for _, i := range order {
		var v []byte
		err := s.db.View(func(tx *bolt.Tx) error {
			v = append([]byte(nil), tx.Bucket(benchBucket).Get(data.keys[i][:])...)
			return nil
		})
		if err != nil {
			return err
		}
		if !bytes.Equal(v, data.value(i)) {
			return fmt.Errorf("bbolt lookup %d: wrong value", i)
		}
	}
	return nil
}

// lookupShared runs all of a goroutine's lookups in one read transaction:
// bbolt's best case.
func (s *boltStore) lookupShared(data *benchData, order []int) error {
	return s.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket(benchBucket)
		for _, i := range order {
			v := append([]byte(nil), bk.Get(data.keys[i][:])...)
			if !bytes.Equal(v, data.value(i)) {
				return fmt.Errorf("bbolt lookup %d: wrong value", i)
			}
		}
		return nil
	})
}

// writtenBytes is what bbolt wrote since open: pages and meta pages (one
// write each; none of the benchmark's pages overflow).
func (s *boltStore) writtenBytes() uint64 {
	st := s.db.Stats()
	return uint64(st.TxStats.GetWrite()) * uint64(s.db.Info().PageSize)
}

func (s *boltStore) close() error { return s.db.Close() }

// timed runs fn and returns its wall time.
func timed(fn func() error) (time.Duration, error) {
	start := time.Now()
	err := fn()
	return time.Since(start), err
}

// as runs fn with the pprof label engine=name, which the goroutines it
// starts inherit — the journal's committer and the ring's among them, when
// fn mounts — so that a CPU profile splits by engine:
// go tool pprof -tagfocus engine=ustore.
func as(name string, fn func()) {
	pprof.Do(context.Background(), pprof.Labels("engine", name), func(context.Context) { fn() })
}

// BenchmarkEngineVsBbolt_Insert inserts -engine.bench.keys random keys per
// iteration, with 1 and 8 writers, into a fresh ustore that waits for each
// round's commit, a fresh ustore that pipelines them, and a fresh bbolt,
// rotating which runs first.
func BenchmarkEngineVsBbolt_Insert(b *testing.B) {
	n := *benchKeyCount
	data := newBenchData(n, 1)
	for _, writers := range []int{1, 8} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			var tU, tP, tB time.Duration
			var restarts, parentLocks, bytesU, bytesB, readsU, readsP, splits, pushes uint64
			var lockWaitU, lockWaitP time.Duration
			var commitWall time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dir := filepath.Join(b.TempDir(), fmt.Sprint(i))
				if err := os.Mkdir(dir, 0o700); err != nil {
					b.Fatal(err)
				}
				var u, up *ustoreStore
				var bb *boltStore
				as("ustore", func() { u = openUstoreBench(b, filepath.Join(dir, "ustore.img")) })
				as("ustore-pipelined", func() { up = openUstoreBench(b, filepath.Join(dir, "ustore-pipelined.img")) })
				up.pipelined = true
				as("bbolt", func() { bb = openBoltBench(b, filepath.Join(dir, "bbolt.db")) })
				w0U, w0B := u.writtenBytes(), bb.writtenBytes()
				runs := []struct {
					name  string
					t     *time.Duration
					store benchStore
				}{{"ustore", &tU, u}, {"ustore-pipelined", &tP, up}, {"bbolt", &tB, bb}}
				b.StartTimer()
				for j := range runs {
					r := runs[(i+j)%len(runs)]
					var d time.Duration
					var err error
					as(r.name, func() { d, err = timed(func() error { return r.store.insert(data, 0, n, writers) }) })
					if err != nil {
						b.Fatal(err)
					}
					*r.t += d
				}
				b.StopTimer()
				st := u.tree.Stats()
				restarts += st.Restarts
				parentLocks += st.ParentWriteLocks
				splits += st.LeafSplits
				pushes += st.LeafPushes
				lockWaitU += u.lockWait()
				lockWaitP += up.lockWait()
				commitWall += u.commitWall
				bytesU += u.writtenBytes() - w0U
				readsU += u.e.Stats().NodeReads
				readsP += up.e.Stats().NodeReads
				bytesB += bb.writtenBytes() - w0B
				for _, s := range []*ustoreStore{u, up} {
					if err := s.check(); err != nil {
						b.Fatalf("fsck after the insert benchmark: %v", err)
					}
				}
				if err := errors.Join(u.close(), up.close(), bb.close(), os.RemoveAll(dir)); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			ops := float64(n) * float64(b.N)
			b.ReportMetric(ops/tU.Seconds(), "ustore-inserts/s")
			b.ReportMetric(ops/tP.Seconds(), "ustore-pipelined-inserts/s")
			b.ReportMetric(ops/tB.Seconds(), "bbolt-inserts/s")
			b.ReportMetric(tB.Seconds()/tU.Seconds(), "ustore/bbolt")
			b.ReportMetric(tB.Seconds()/tP.Seconds(), "ustore-pipelined/bbolt")
			b.ReportMetric(100*commitWall.Seconds()/tU.Seconds(), "ustore-commit-%")
			b.ReportMetric(ops/(tU-commitWall).Seconds(), "ustore-insertphase-inserts/s")
			b.ReportMetric(float64(bytesU)/ops, "ustore-written-B/insert")
			b.ReportMetric(float64(bytesB)/ops, "bbolt-written-B/insert")
			b.ReportMetric(float64(lockWaitU.Nanoseconds())/ops, "ustore-lockwait-ns/insert")
			b.ReportMetric(float64(lockWaitP.Nanoseconds())/ops, "ustore-pipelined-lockwait-ns/insert")
			b.ReportMetric(float64(readsU)/ops, "ustore-node-reads/insert")
			b.ReportMetric(float64(readsP)/ops, "ustore-pipelined-node-reads/insert")
			b.ReportMetric(float64(restarts)/ops, "ustore-restarts/insert")
			b.ReportMetric(float64(parentLocks)/ops, "ustore-parentlocks/insert")
			b.ReportMetric(1000*float64(splits)/ops, "ustore-leaf-splits/1k-inserts")
			b.ReportMetric(1000*float64(pushes)/ops, "ustore-leaf-pushes/1k-inserts")
		})
	}
}

// BenchmarkEngineVsBbolt_Lookup fills both engines once (one writer, as the
// insert benchmark), then looks every key up in random order per iteration,
// with 1 and 8 goroutines. Both caches are warm: the figures are the CPU
// cost of a point read.
func BenchmarkEngineVsBbolt_Lookup(b *testing.B) {
	n := *benchKeyCount
	data := newBenchData(n, 1)
	dir := b.TempDir()
	var u *ustoreStore
	var bb *boltStore
	as("ustore", func() { u = openUstoreBench(b, filepath.Join(dir, "ustore.img")) })
	as("bbolt", func() { bb = openBoltBench(b, filepath.Join(dir, "bbolt.db")) })
	b.Cleanup(func() {
		if err := errors.Join(u.close(), bb.close()); err != nil {
			b.Error(err)
		}
	})
	if err := errors.Join(u.insert(data, 0, n, 1), bb.insert(data, 0, n, 1)); err != nil {
		b.Fatal(err)
	}
	if err := u.check(); err != nil {
		b.Fatalf("fsck before the lookups: %v", err)
	}
	order := rand.New(rand.NewPCG(2, 2)).Perm(n)
	for _, readers := range []int{1, 8} {
		b.Run(fmt.Sprintf("readers=%d", readers), func(b *testing.B) {
			parts := splitRound(0, n, readers)
			var tU, tB, tS time.Duration
			reads0 := u.e.Stats().NodeReads
			for i := 0; i < b.N; i++ {
				runs := []struct {
					name string
					t    *time.Duration
					fn   func(order []int) error
				}{
					{"ustore", &tU, func(o []int) error { return u.lookup(data, o) }},
					{"bbolt", &tB, func(o []int) error { return bb.lookupEach(data, o) }},
					{"bbolt", &tS, func(o []int) error { return bb.lookupShared(data, o) }},
				}
				for j := range runs {
					r := runs[(i+j)%len(runs)] // rotate who goes first
					var d time.Duration
					var err error
					as(r.name, func() {
						d, err = timed(func() error {
							return runParts(parts, func(a, b int) error { return r.fn(order[a:b]) })
						})
					})
					if err != nil {
						b.Fatal(err)
					}
					*r.t += d
				}
			}
			ops := float64(n) * float64(b.N)
			b.ReportMetric(ops/tU.Seconds(), "ustore-lookups/s")
			b.ReportMetric(ops/tB.Seconds(), "bbolt-lookups/s")
			b.ReportMetric(ops/tS.Seconds(), "bbolt-1tx-lookups/s")
			b.ReportMetric(tB.Seconds()/tU.Seconds(), "ustore/bbolt")
			b.ReportMetric(tS.Seconds()/tU.Seconds(), "ustore/bbolt-1tx")
			b.ReportMetric(float64(u.e.Stats().NodeReads-reads0)/ops, "ustore-node-reads/lookup")
		})
	}
}

// Dir-index items of the batch benchmark: dirIndexItems per directory,
// dirIndexPayload bytes each (a btrfs dir item with a short name), so that
// dirIndexBatch of them fill a 16 KiB leaf: 250 × (25 + 40) = 16,250 of
// 16,320 bytes.
const (
	dirIndexItems   = 100_000
	dirIndexPayload = 40
	dirIndexBatch   = 250
	dirIndexOthers  = 20 // directories already in the tree
)

// newDirIndexEngine is a memdev engine whose fs tree holds dirIndexOthers
// directories of 2,500 entries at odd inode numbers (so that the measured
// directory, at an even one, goes between them), committed.
func newDirIndexEngine(b *testing.B) (*Engine, *Tree) {
	b.Helper()
	d := memdev.New(1 << 30)
	if err := Mkfs(d, MkfsOptions{NodeSize: benchNodeSize}); err != nil {
		b.Fatal(err)
	}
	e, err := Mount(d, Options{Logger: quiet(), CommitInterval: 5 * time.Minute, DirtyBytesMax: 8 << 30})
	if err != nil {
		b.Fatal(err)
	}
	tree := e.Tree(FSTreeID)
	tr, err := e.Start()
	if err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, dirIndexPayload)
	for dir := range dirIndexOthers {
		keys, payloads := dirIndexRun(uint64(2*dir+1001), 2500, payload)
		batch, err := NewItemBatch(keys, payloads)
		if err == nil {
			err = tree.InsertItems(tr, batch)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	tr.End()
	if _, err := e.Commit(context.Background()); err != nil {
		b.Fatal(err)
	}
	d.ForgetHistory()
	return e, tree
}

// dirIndexRun returns n dir-index keys of directory ino from index 2 up,
// each with payload.
func dirIndexRun(ino uint64, n int, payload []byte) ([]Key, [][]byte) {
	keys := make([]Key, n)
	payloads := make([][]byte, n)
	for i := range keys {
		keys[i] = Key{ObjectID: ino, Type: TypeDirIndex, Offset: uint64(i + 2)}
		payloads[i] = payload
	}
	return keys, payloads
}

// BenchmarkInsertItems_DirIndex inserts one directory of dirIndexItems
// entries per iteration into two fresh engines: in one, batches of
// dirIndexBatch consecutive keys (NewItemBatch + InsertItems: building the
// batch is timed, as a caller pays it); in the other, one InsertItem per
// entry. Both under one transaction handle, on memdev, no commit timed:
// the insert path's CPU cost alone.
func BenchmarkInsertItems_DirIndex(b *testing.B) {
	payload := make([]byte, dirIndexPayload)
	for i := range payload {
		payload[i] = byte(i)
	}
	const ino = 1010 // between the others' 1009 and 1011
	keys, payloads := dirIndexRun(ino, dirIndexItems, payload)
	var tBatch, tSingle time.Duration
	var splitsBatch, splitsSingle uint64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		eBatch, treeBatch := newDirIndexEngine(b)
		eSingle, treeSingle := newDirIndexEngine(b)
		s0Batch, s0Single := treeBatch.Stats().LeafSplits, treeSingle.Stats().LeafSplits
		b.StartTimer()
		batched := func() error {
			tr, err := eBatch.Start()
			if err != nil {
				return err
			}
			defer tr.End()
			for lo := 0; lo < len(keys); lo += dirIndexBatch {
				hi := min(lo+dirIndexBatch, len(keys))
				batch, err := NewItemBatch(keys[lo:hi], payloads[lo:hi])
				if err != nil {
					return err
				}
				if err := treeBatch.InsertItems(tr, batch); err != nil {
					return err
				}
			}
			return nil
		}
		single := func() error {
			tr, err := eSingle.Start()
			if err != nil {
				return err
			}
			defer tr.End()
			for j, k := range keys {
				if err := treeSingle.InsertItem(tr, k, payloads[j]); err != nil {
					return err
				}
			}
			return nil
		}
		var dBatch, dSingle time.Duration
		var err1, err2 error
		if i%2 == 0 {
			dBatch, err1 = timed(batched)
			dSingle, err2 = timed(single)
		} else {
			dSingle, err2 = timed(single)
			dBatch, err1 = timed(batched)
		}
		b.StopTimer()
		if err := errors.Join(err1, err2); err != nil {
			b.Fatal(err)
		}
		tBatch += dBatch
		tSingle += dSingle
		splitsBatch += treeBatch.Stats().LeafSplits - s0Batch
		splitsSingle += treeSingle.Stats().LeafSplits - s0Single
		for _, e := range []*Engine{eBatch, eSingle} {
			if _, err := e.Commit(context.Background()); err != nil {
				b.Fatal(err)
			}
			if err := Check(e).Err(); err != nil {
				b.Fatalf("fsck after the batch benchmark: %v", err)
			}
			if err := e.Close(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
	items := float64(dirIndexItems) * float64(b.N)
	b.ReportMetric(float64(tBatch.Nanoseconds())/items, "batch-ns/item")
	b.ReportMetric(float64(tSingle.Nanoseconds())/items, "single-ns/item")
	b.ReportMetric(tSingle.Seconds()/tBatch.Seconds(), "single/batch")
	b.ReportMetric(float64(splitsBatch)*1000/items, "batch-splits/1k-items")
	b.ReportMetric(float64(splitsSingle)*1000/items, "single-splits/1k-items")
}

// commitLog is a slog handler that keeps the phases of the engine's
// "engine: committed" debug lines; other lines at Warn and above go to the
// benchmark's log.
type commitLog struct {
	b  *testing.B
	mu sync.Mutex
	// The last commit's figures.
	nodes                 int64
	updates, write, total time.Duration
}

func (h *commitLog) Enabled(_ context.Context, l slog.Level) bool {
	return l == slog.LevelDebug || l >= slog.LevelWarn
}

func (h *commitLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "engine: committed" {
		if r.Level >= slog.LevelWarn {
			h.b.Logf("%s %s", r.Level, r.Message)
		}
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "nodes":
			h.nodes = a.Value.Int64()
		case "updates":
			h.updates = a.Value.Duration()
		case "write":
			h.write = a.Value.Duration()
		case "took":
			h.total = a.Value.Duration()
		}
		return true
	})
	return nil
}

func (h *commitLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *commitLog) WithGroup(string) slog.Handler      { return h }

func (h *commitLog) last() (nodes int64, updates, write, total time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.nodes, h.updates, h.write, h.total
}

// commitBenchLeaves is how many leaves the commit benchmark's tree has at
// least: one per dirty leaf of the largest case, and some.
const commitBenchLeaves = 10_500

// commitBench is an engine holding a tree of at least commitBenchLeaves
// leaves, and the first key of each leaf.
type commitBench struct {
	e        *Engine
	d        dev.Device
	tree     *Tree
	leafKeys []Key
	log      *commitLog
}

// refDevice is memdev until on is set, and from then on a device whose
// writes cost next to nothing: it keeps a reference to each buffer written
// instead of a copy (the engine never changes a node's buffer once it is
// written: a later change goes to a CoW copy), and serves reads of exactly
// such a write from it, others from memdev. A commit on it costs the
// engine's CPU alone (memdev's copying and history would cost more than the
// disk). Node-sized writes at node-aligned offsets never partly overlap,
// which is all it supports: a write of another size over one it holds is
// refused.
type refDevice struct {
	*memdev.Device
	on   atomic.Bool
	mu   sync.Mutex
	bufs map[int64][]byte
}

func (d *refDevice) Write(ios []dev.IO) error {
	if !d.on.Load() {
		return d.Device.Write(ios)
	}
	if err := dev.CheckIO(ios, d.Size()); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	// Keep a reference per sector, so writes of any size may overlap
	// earlier ones (the engine writes one node per IO today; the per-sector
	// map keeps that an engine choice, not this device's limit).
	for _, io := range ios {
		for k := 0; k < len(io.Buf); k += dev.SectorSize {
			d.bufs[io.Off+int64(k)] = io.Buf[k : k+dev.SectorSize]
		}
	}
	return nil
}

func (d *refDevice) Read(ios []dev.IO) error {
	if !d.on.Load() {
		return d.Device.Read(ios)
	}
	for i := range ios {
		io := &ios[i]
		for k := 0; k < len(io.Buf); k += dev.SectorSize {
			off := io.Off + int64(k)
			d.mu.Lock()
			buf, ok := d.bufs[off]
			d.mu.Unlock()
			if ok {
				copy(io.Buf[k:k+dev.SectorSize], buf)
				continue
			}
			if err := d.Device.Read([]dev.IO{{Off: off, Buf: io.Buf[k : k+dev.SectorSize]}}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (d *refDevice) Flush() error {
	if d.on.Load() {
		return nil
	}
	return d.Device.Flush()
}

func (d *refDevice) WriteDurable(stages ...[]dev.IO) error {
	for _, s := range stages {
		if err := d.Write(s); err != nil {
			return err
		}
		if err := d.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// countingDevice counts the write IOs handed to Write and WriteDurable (a
// commit's nodes, then its superblock copies) and how many runs of adjacent
// IOs they form once sorted: the requests a device makes when it merges
// neighbours.
type countingDevice struct {
	dev.Device
	ios, runs atomic.Uint64
}

func (d *countingDevice) Write(ios []dev.IO) error {
	d.count(ios)
	return d.Device.Write(ios)
}

func (d *countingDevice) WriteDurable(stages ...[]dev.IO) error {
	for _, s := range stages {
		d.count(s)
	}
	return d.Device.WriteDurable(stages...)
}

func (d *countingDevice) count(s []dev.IO) {
	offs := make([][2]int64, len(s))
	for i, io := range s {
		offs[i] = [2]int64{io.Off, io.Off + int64(len(io.Buf))}
	}
	slices.SortFunc(offs, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	runs := 0
	for i := range offs {
		if i == 0 || offs[i][0] != offs[i-1][1] {
			runs++
		}
	}
	d.ios.Add(uint64(len(s)))
	d.runs.Add(uint64(runs))
}

func newCommitBench(b *testing.B, d dev.Device) *commitBench {
	b.Helper()
	c := &commitBench{d: d, log: &commitLog{b: b}}
	if err := Mkfs(d, MkfsOptions{NodeSize: benchNodeSize}); err != nil {
		b.Fatal(err)
	}
	// The default cache budget: node-reads and cache-MiB show what it
	// holds.
	e, err := Mount(d, Options{Logger: slog.New(c.log), CommitInterval: 5 * time.Minute,
		DirtyBytesMax: 8 << 30})
	if err != nil {
		b.Fatal(err)
	}
	c.e = e
	tr, err := e.Start()
	if err != nil {
		b.Fatal(err)
	}
	if c.tree, err = e.CreateTree(tr, benchTreeID); err != nil {
		b.Fatal(err)
	}
	tr.End()
	// Consecutive keys in batches until the tree has enough leaves (no
	// merges happen here, so leaves = splits + 1), committing every
	// 125,000 items.
	value := make([]byte, benchValueSize)
	next := uint64(0)
	for c.tree.Stats().LeafSplits+1 < commitBenchLeaves {
		tr, err := e.Start()
		if err != nil {
			b.Fatal(err)
		}
		for range 500 {
			keys := make([]Key, 250)
			payloads := make([][]byte, len(keys))
			for j := range keys {
				keys[j] = Key{ObjectID: next, Type: TypeTest}
				payloads[j] = value
				next++
			}
			batch, err := NewItemBatch(keys, payloads)
			if err == nil {
				err = c.tree.InsertItems(tr, batch)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		tr.End()
		if _, err := e.Commit(context.Background()); err != nil {
			b.Fatal(err)
		}
		if m, ok := d.(*refDevice); ok {
			m.ForgetHistory() // memdev keeps every write otherwise
		}
	}
	if c.leafKeys, err = leafFirstKeys(c.tree); err != nil {
		b.Fatal(err)
	}
	if len(c.leafKeys) < commitBenchLeaves {
		b.Fatalf("commit benchmark tree has %d leaves, want %d", len(c.leafKeys), commitBenchLeaves)
	}
	if err := Check(e).Err(); err != nil {
		b.Fatalf("fsck of the commit benchmark tree: %v", err)
	}
	if m, ok := d.(*refDevice); ok {
		m.on.Store(true)
	}
	return c
}

// dirty changes one byte of the first item of count leaves spread over
// the tree, in one transaction: count leaves CoW'd, plus their parents.
func (c *commitBench) dirty(b *testing.B, count int, round int) {
	tr, err := c.e.Start()
	if err != nil {
		b.Fatal(err)
	}
	defer tr.End()
	for j := range count {
		k := c.leafKeys[j*len(c.leafKeys)/count]
		if err := c.tree.UpdateItem(tr, k, func(v []byte) { v[0] = byte(round) }); err != nil {
			b.Fatal(err)
		}
	}
}

func (c *commitBench) close(b *testing.B) {
	if err := Check(c.e).Err(); err != nil {
		b.Errorf("fsck after the commit benchmark: %v", err)
	}
	if err := errors.Join(c.e.Close(context.Background()), c.d.Close()); err != nil {
		b.Error(err)
	}
}

// leafFirstKeys returns the first key of every leaf, left to right.
func leafFirstKeys(t *Tree) ([]Key, error) {
	var keys []Key
	var p Path
	defer p.Release()
	from := MinKey
	for {
		if _, err := t.SearchSlot(nil, from, &p, 0, false); err != nil {
			return nil, err
		}
		if leaf, _ := p.Leaf(); leaf.ItemCount() > 0 {
			keys = append(keys, leaf.Key(0))
		}
		if !p.hasUpper {
			return keys, nil
		}
		from = p.upper
		p.Release()
	}
}

// BenchmarkCommit_DirtyNodes times Engine.Commit (the wall time of the
// call: the journal's hand-off to its committer included) after dirtying
// 100, 1,000 and 10,000 leaves, on refDevice (memref: the CPU side) and on
// uringdev in b.TempDir (O_DIRECT: CPU + I/O). The engine's
// debug line splits each commit into updates (root items and free space
// tree), seal (the nodes' checksums) and write (WriteDurable:
// the nodes, a flush, the superblock, a flush — and the cache shrink after
// it). Dirtying is outside the timer.
func BenchmarkCommit_DirtyNodes(b *testing.B) {
	devices := []struct {
		name string
		open func(b *testing.B) dev.Device
	}{
		{"memref", func(b *testing.B) dev.Device {
			return &refDevice{Device: memdev.New(benchDeviceSize), bufs: map[int64][]byte{}}
		}},
		{"uringdev", func(b *testing.B) dev.Device {
			d, err := uringdev.Open(filepath.Join(b.TempDir(), "ustore.img"), uringdev.Options{Size: benchDeviceSize, Logger: quiet()})
			if err != nil {
				b.Fatalf("uringdev: %v", err)
			}
			return &countingDevice{Device: d}
		}},
	}
	for _, dv := range devices {
		c := newCommitBench(b, dv.open(b))
		for _, count := range []int{100, 1000, 10_000} {
			b.Run(fmt.Sprintf("dev=%s/leaves=%d", dv.name, count), func(b *testing.B) {
				var nodes int64
				var updates, write, total time.Duration
				var ios0, runs0 uint64
				reads0 := c.e.Stats().NodeReads
				cd, counting := c.d.(*countingDevice)
				if counting {
					ios0, runs0 = cd.ios.Load(), cd.runs.Load()
				}
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					c.dirty(b, count, i)
					b.StartTimer()
					if _, err := c.e.Commit(context.Background()); err != nil {
						b.Fatal(err)
					}
					n, u, w, t := c.log.last()
					nodes += n
					updates += u
					write += w
					total += t
				}
				per := float64(b.N)
				ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / per }
				b.ReportMetric(float64(nodes)/per, "dirty-nodes")
				b.ReportMetric(float64(c.e.Stats().NodeReads-reads0)/per, "node-reads")
				b.ReportMetric(float64(c.e.cache.Bytes())/(1<<20), "cache-MiB")
				b.ReportMetric(ms(updates), "updates-ms")
				b.ReportMetric(ms(total-updates-write), "seal-ms")
				b.ReportMetric(ms(write), "write-ms")
				if counting {
					b.ReportMetric(float64(nodes)*benchNodeSize/(1<<20)/write.Seconds(), "write-MiB/s")
					b.ReportMetric(float64(cd.ios.Load()-ios0)/per, "write-ios")
					b.ReportMetric(float64(cd.runs.Load()-runs0)/per, "write-runs")
				}
			})
		}
		c.close(b)
	}
}
