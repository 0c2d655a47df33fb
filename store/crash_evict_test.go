package store

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
)

// TestCrash_InodesEvicted: the crash workloads under memory pressure,
// with every inode the table may evict leaving memory between each
// operation and its persistence point. The store runs on a 64 KiB cache
// budget (sixteen 4 KiB nodes, so the hand evicts nodes, pages and inodes
// all the while), and between the operation and its fsync the dirty data
// is written back — as the flusher does when the dirty budget fills —
// and every clean, unused inode is evicted: the fsync then loads the
// inode again from the tree, in the running transaction, and must log
// what the transaction changed of it (logTrack, kept per store by inode
// number, not in the inode). Every crash point is checked as
// TestCrash_Workloads checks its own: fsck clean, no orphan, no leak,
// every fact the last returned persistence point made durable holds.
//
// The test fails if too few fsyncs found their inode evicted: it must
// test the reload, not just run beside it.
func TestCrash_InodesEvicted(t *testing.T) {
	start := time.Now()
	base, m0 := crashBase(t)
	var ws []crashWorkload
	crashEnumerate(m0, 1, func(w crashWorkload) { ws = append(ws, w) })
	n1 := len(ws)
	var two []crashWorkload
	crashEnumerate(m0, 2, func(w crashWorkload) { two = append(two, w) })
	rng := rand.New(rand.NewPCG(20261202, 1))
	rng.Shuffle(len(two), func(i, j int) { two[i], two[j] = two[j], two[i] })
	n2 := 150
	if testing.Short() || raceEnabled() {
		n2 = 30
	}
	ws = append(ws, two[:n2]...)
	ws = append(ws, crashRegressions...)
	ws = append(ws, crashOrphanWorkloads...)
	batches := crashBatchWorkloads(m0)
	if testing.Short() || raceEnabled() {
		batches = batches[:len(batches)/4]
	}
	ws = append(ws, batches...)

	opts := crashOptions()
	opts.CacheBytes = 64 << 10
	var (
		evicted, reloaded atomic.Int64 // inodes evicted between; fsyncs whose inode was among them
	)
	between := func(s *Store, m crashModel, st crashStep) error {
		for _, in := range s.wb.dirtyInodes() {
			if err := s.writebackInode(in); err != nil {
				return err
			}
		}
		evicted.Add(int64(evictInodes(s)))
		var ino Ino
		var ok bool
		switch st.pp.kind {
		case ppSync:
			return nil
		case ppFsyncHeld:
			ino, ok = m.held(st.pp.path)
		default:
			ino, ok = m.lookup(st.pp.path)
		}
		if ok && s.itab.peek(ino) == nil {
			reloaded.Add(1)
		}
		return nil
	}
	cases := crashCheckWorkloads(t, ws, 11, func(w crashWorkload) (*crashRun, error) {
		return crashRunWorkloadWith(base, m0, w, opts, between)
	})
	t.Logf("%d workloads (%d of 1 step, %d of 2, %d regressions, %d with open files, %d with batched creates): %d inodes evicted between an operation and its persistence point, %d fsyncs of an evicted inode; %d crash points checked, %v",
		len(ws), n1, n2, len(crashRegressions), len(crashOrphanWorkloads), len(batches), evicted.Load(), reloaded.Load(), cases, time.Since(start).Round(time.Millisecond))
	if t.Failed() {
		return
	}
	// Most fsyncs name a file or directory nobody holds: its inode must
	// have been evicted before it, in most workloads.
	if got := reloaded.Load(); got < int64(len(ws))/2 {
		t.Fatalf("only %d fsyncs of %d workloads found their inode evicted: the test does not test the reload", got, len(ws))
	}
}
