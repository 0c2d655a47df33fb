package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestTree_Shape_AfterEveryOp checks the tree's structure (key order within
// and across nodes, parent keys, generations, fill bounds) after every
// single random operation, so a broken split or merge is caught at the
// operation that broke it.
func TestTree_Shape_AfterEveryOp(t *testing.T) {
	for _, c := range []struct {
		keySpace uint64
		maxVal   int
	}{{3000, 200}, {400, 900}} {
		t.Run(fmt.Sprintf("keys%d_val%d", c.keySpace, c.maxVal), func(t *testing.T) {
			seed := uint64(rand.Int64())
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(seed, 7))
			e, _ := newTestEngine(t, 256<<20, 4096)
			tr, _ := e.Start()
			tree, err := e.CreateTree(tr, testTree)
			if err != nil {
				t.Fatal(err)
			}
			m := model{}
			for op := 0; op < 6000; op++ {
				randomOps(t, rng, tr, tree, m, 1, c.keySpace, c.maxVal)
				rep := &CheckReport{}
				tree.rootLock.RLock()
				root := tree.root
				tree.rootLock.RUnlock()
				e.checkNode(tree, root, true, MinKey, MaxKey, false, map[Bytenr]uint64{}, rep)
				if err := rep.Err(); err != nil {
					t.Fatalf("after op %d: %v", op, err)
				}
			}
			tr.End()
			compareTree(t, tree, m)
			if tree.Stats().LeafPushes == 0 {
				t.Fatal("no leaf pushed into a sibling: the shape check did not cover push.go")
			}
			commit(t, e)
			check(t, e)
			closeEngine(t, e)
		})
	}
}
