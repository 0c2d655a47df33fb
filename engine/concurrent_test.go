package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// TestTree_Concurrent_WithCommits runs writers — inserting and deleting in
// disjoint ranges, in one range where their keys interleave (so they contend
// for the same leaves), and inserting into a shared range — with readers and
// a committer at once; the final tree must equal the writers' models and
// pass fsck.
func TestTree_Concurrent_WithCommits(t *testing.T) {
	e, d := newTestEngine(t, 512<<20, 4096)
	tr, _ := e.Start()
	tree, err := e.CreateTree(tr, testTree)
	if err != nil {
		t.Fatal(err)
	}
	tr.End()
	const writers = 8
	const opsPerWriter = 800
	models := make([]model, writers)
	var shared sync.Map // key → payload, for the overlapping range
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 64)
	for w := range writers {
		models[w] = model{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 99))
			m := models[w]
			base := uint64(w+1) << 32
			for op := 0; op < opsPerWriter; op++ {
				tr, err := e.Start()
				if err != nil {
					errs <- err
					return
				}
				// Half the time a key of this writer's own range, half the
				// time one interleaved with every other writer's (key mod
				// writers == w): the same leaves, different keys.
				k := testKey(base + rng.Uint64N(500))
				if rng.IntN(2) == 0 {
					k = testKey(1<<40 + rng.Uint64N(500)*writers + uint64(w))
				}
				if rng.IntN(3) == 0 {
					if err := tree.DeleteItem(tr, k); err == nil {
						delete(m, k)
					} else if !errors.Is(err, ErrNotFound) {
						errs <- err
					}
				} else {
					v := testValue(rng.Uint64(), 20+rng.IntN(150))
					if err := tree.InsertItem(tr, k, v); err == nil {
						m[k] = v
					} else if !errors.Is(err, ErrExists) {
						errs <- err
					}
				}
				// The shared range: inserts of unique keys by anyone, so
				// the expected content is known.
				sk := testKey(uint64(w)*opsPerWriter + uint64(op))
				sv := testValue(uint64(op), 40)
				if err := tree.InsertItem(tr, sk, sv); err != nil {
					errs <- err
				}
				shared.Store(sk, sv)
				tr.End()
			}
		}()
	}
	// Readers and a committer run until the writers are done.
	var bg sync.WaitGroup
	for r := 0; r < 2; r++ {
		bg.Add(1)
		go func() {
			defer bg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 5))
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := tree.Lookup(testKey(rng.Uint64N(writers * opsPerWriter)))
				if err != nil && !errors.Is(err, ErrNotFound) {
					errs <- err
					return
				}
			}
		}()
	}
	bg.Add(1)
	go func() {
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(3 * time.Millisecond):
			}
			if _, err := e.Commit(context.Background()); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	bg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	all := model{}
	for _, m := range models {
		for k, v := range m {
			all[k] = v
		}
	}
	shared.Range(func(k, v any) bool {
		all[k.(Key)] = v.([]byte)
		return true
	})
	compareTree(t, tree, all)
	commit(t, e)
	check(t, e)
	if e.Stats().Commits < 2 {
		t.Fatalf("only %d commits ran beside the writers", e.Stats().Commits)
	}
	if tree.Stats().LeafPushes == 0 {
		t.Fatal("no leaf pushed into a sibling: concurrent pushes went untested")
	}
	closeEngine(t, e)
	e = mount(t, d)
	compareTree(t, e.Tree(testTree), all)
	check(t, e)
	closeEngine(t, e)
}

// TestTree_LockStats_CountsContention: node locks record nothing while
// uncontended, and the contended waits of many writers show up per level.
func TestTree_LockStats_CountsContention(t *testing.T) {
	e, _ := newTestEngine(t, 64<<20, 4096)
	tr, _ := e.Start()
	tree, _ := e.CreateTree(tr, testTree)
	for i := uint64(0); i < 500; i++ {
		if err := tree.InsertItem(tr, testKey(i), testValue(i, 50)); err != nil {
			t.Fatal(err)
		}
	}
	tr.End()
	total := func() (n uint64) {
		for _, s := range tree.LockStats() {
			n += s.Contended
		}
		return n
	}
	if n := total(); n != 0 {
		t.Fatalf("one goroutine recorded %d contended waits", n)
	}
	// Hold key 0's leaf read-locked while the writers start, so that their
	// first acquisitions must wait: contention is then certain, not luck.
	var held Path
	if _, err := tree.SearchSlot(nil, testKey(0), &held, 0, false); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := uint64(0); i < 200; i++ {
				tr, _ := e.Start()
				_ = tree.UpdateItem(tr, testKey(i%8), func(b []byte) { b[0] = byte(w) })
				tr.End()
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	held.Release()
	wg.Wait()
	t.Logf("contended waits after 8 writers on the same leaf: %d", total())
	if total() == 0 {
		t.Fatal("8 writers updating the same leaf never contended")
	}
	commit(t, e)
	check(t, e)
}
