package engine

import (
	"testing"
	"time"
)

// rootAtWithin calls t.rootAt(gen), failing the test when it does not
// return within a few seconds (a cycle in the history would spin forever).
func rootAtWithin(tb testing.TB, t *Tree, gen Generation) *ExtentBuffer {
	tb.Helper()
	got := make(chan *ExtentBuffer, 1)
	go func() { got <- t.rootAt(gen) }()
	select {
	case r := <-got:
		return r
	case <-time.After(10 * time.Second):
		tb.Fatalf("rootAt(%d) did not return: the tree's root history loops", gen)
		return nil
	}
}

// fillTree makes a tree of items 0..n-1 (100 bytes each) in one
// transaction, commits it, and returns it with the committed root.
func fillTree(t *testing.T, e *Engine, n uint64) (*Tree, *ExtentBuffer) {
	t.Helper()
	tr, err := e.Start()
	if err != nil {
		t.Fatal(err)
	}
	tree, err := e.CreateTree(tr, testTree)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := tree.InsertItem(tr, testKey(i), testValue(i, 100)); err != nil {
			t.Fatal(err)
		}
	}
	tr.End()
	commit(t, e)
	return tree, tree.root
}

// TestTree_RootAt_SplitThenCollapse: within one transaction a leaf root is
// CoW'd, splits under a new root, and the delete of the right half
// collapses the new root back onto it: the same node becomes the root a
// second time. rootAt for the transaction before must still find that
// transaction's root — it used to follow a two-node cycle forever, which hung
// a commit (TestLog_ParallelFsync, in the checksum tree).
func TestTree_RootAt_SplitThenCollapse(t *testing.T) {
	// Closed at the end only: a failed rootAt may leave a goroutine
	// spinning with the tree's history locked.
	e, _ := newTestEngine(t, 64<<20, 4096)
	tree, before := fillTree(t, e, 10)
	if before.Level() != 0 {
		t.Fatalf("setup: root level %d, want a leaf", before.Level())
	}
	tr, err := e.Start()
	if err != nil {
		t.Fatal(err)
	}
	const grown = 200
	for i := uint64(10); i < grown; i++ {
		if err := tree.InsertItem(tr, testKey(i), testValue(i, 100)); err != nil {
			t.Fatal(err)
		}
	}
	if tree.root.Level() == 0 {
		t.Fatal("setup: the root did not split")
	}
	if _, err := tree.DeleteRange(tr, testKey(10), testKey(grown)); err != nil {
		t.Fatal(err)
	}
	if tree.root.Level() != 0 {
		t.Fatalf("setup: the root did not collapse (level %d)", tree.root.Level())
	}
	if r := rootAtWithin(t, tree, tr.id-1); r != before {
		t.Fatalf("rootAt(%d) = %v, want the committed root %d", tr.id-1, r, before.bytenr)
	}
	if r := rootAtWithin(t, tree, tr.id); r != tree.root {
		t.Fatalf("rootAt(%d) is not the current root", tr.id)
	}
	tr.End()
	commit(t, e)
	check(t, e)
	closeEngine(t, e)
}
