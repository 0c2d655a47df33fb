package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"time"
)

// Crash workloads with batched creates (create_batch.go): a step of
// opCreateBatch makes its files concurrently, queued behind the
// directory's held lock so that they are one pass of its create queue,
// with one more create of the pass's first name — EEXIST, in the same
// pass — which must leave nothing. TestCrash_Workloads and
// TestCrash_InodesEvicted run them with the rest (crashBatchWorkloads):
// every crash point must recover to a state the model allows, and every
// create a returned persistence point covered (an fsync of the new file,
// of its directory, a sync) must be there.

// batchNames are the names an opCreateBatch makes.
func (o crashOp) batchNames() []string {
	names := make([]string, o.n)
	for i := range names {
		names[i] = fmt.Sprintf("%s%d", o.b, i)
	}
	return names
}

// crashExecBatch creates names in dir in one pass of its create queue,
// and a duplicate of the first, and returns the first new inode (the
// others follow it).
func crashExecBatch(s *Store, dir Ino, names []string) (Ino, error) {
	d, err := s.getDir(dir)
	if err != nil {
		return 0, err
	}
	d.mu.Lock()
	all := append(names[:len(names):len(names)], names[0])
	res := make([]batchResult, len(all))
	var wg sync.WaitGroup
	for i, name := range all {
		wg.Go(func() {
			a, err := s.Create(dir, name, 0o644)
			res[i] = batchResult{name, a, err}
		})
		for deadline := time.Now().Add(10 * time.Second); createQueued(s, dir) < i+1; time.Sleep(100 * time.Microsecond) {
			if time.Now().After(deadline) {
				d.mu.Unlock()
				wg.Wait()
				s.itab.put(d)
				return 0, fmt.Errorf("%d creates queued, want %d", createQueued(s, dir), i+1)
			}
		}
	}
	d.mu.Unlock()
	wg.Wait()
	s.itab.put(d)
	if dup := res[len(res)-1]; !errors.Is(dup.err, syscall.EEXIST) {
		return 0, fmt.Errorf("create %s again in the pass: %v, want EEXIST", dup.name, dup.err)
	}
	for i, r := range res[:len(names)] {
		if r.err != nil {
			return 0, fmt.Errorf("create %s: %w", r.name, r.err)
		}
		if r.a.Ino != res[0].a.Ino+Ino(i) {
			return 0, fmt.Errorf("create %s: inode %d, not one pass's (first %d)", r.name, r.a.Ino, res[0].a.Ino)
		}
	}
	return res[0].a.Ino, nil
}

// crashBatchOps are the batches the workloads make.
var crashBatchOps = []crashOp{
	{kind: opCreateBatch, a: "/D", b: "b", n: 6},
	{kind: opCreateBatch, a: "/", b: "r", n: 3},
	{kind: opCreateBatch, a: "/D", b: "c", n: 4},
}

// crashBatchWorkloads are the batch workloads from m0: each batch of
// crashBatchOps followed by every persistence point that may follow it;
// then two steps, a batch and an operation of crashOps (or another batch)
// in either order, each with a persistence point drawn by a fixed seed.
func crashBatchWorkloads(m0 crashModel) []crashWorkload {
	var ws []crashWorkload
	next := Ino(1 << 40)
	after := func(m crashModel, op crashOp, step int) (crashModel, bool) {
		r, err := m.resolve(op, step)
		if err != nil {
			return nil, false
		}
		m = m.clone()
		next += 1 << 10
		m.apply(op, r, next)
		return m, true
	}
	for _, op := range crashBatchOps[:2] {
		m1, _ := after(m0, op, 0)
		for _, pp := range crashPPs(m1, []crashOp{op}) {
			ws = append(ws, crashWorkload{{op, pp}})
		}
	}
	rng := rand.New(rand.NewPCG(20261202, 15))
	pick := func(m crashModel, ops []crashOp) crashPP {
		pps := crashPPs(m, ops)
		return pps[rng.IntN(len(pps))]
	}
	others := append(crashOps[:len(crashOps):len(crashOps)], crashBatchOps...)
	for _, b := range crashBatchOps {
		for _, op := range others {
			for _, pair := range [][2]crashOp{{b, op}, {op, b}} {
				m1, ok := after(m0, pair[0], 0)
				if !ok {
					continue
				}
				m2, ok := after(m1, pair[1], 1)
				if !ok {
					continue
				}
				ws = append(ws, crashWorkload{
					{pair[0], pick(m1, pair[:1])},
					{pair[1], pick(m2, pair[:])},
				})
			}
		}
	}
	return ws
}
