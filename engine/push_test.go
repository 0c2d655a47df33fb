package engine

import "testing"

// TestPushLeaf_OnlyIntoCachedSibling: a full leaf pushes into a sibling
// only if the sibling is in memory — the parent is write-locked meanwhile,
// and a device read under it would stall every search through it. After a
// remount the right sibling of a full leaf is on disk only: the insert
// splits and reads no node beyond its path. Once a lookup has read the
// sibling, the same insert pushes.
func TestPushLeaf_OnlyIntoCachedSibling(t *testing.T) {
	for _, warm := range []bool{false, true} {
		e, d := newTestEngine(t, 32<<20, 4096)
		tr, _ := e.Start()
		if _, err := e.CreateTree(tr, testTree); err != nil {
			t.Fatal(err)
		}
		insert := func(keys ...uint64) {
			t.Helper()
			tr, err := e.Start()
			if err != nil {
				t.Fatal(err)
			}
			defer tr.End()
			for _, k := range keys {
				if err := e.Tree(testTree).InsertItem(tr, testKey(k), testValue(k, 100)); err != nil {
					t.Fatal(err)
				}
			}
		}
		tr.End()
		// testdata/push: a full left leaf 2..64 and a right one 68..128
		// with 1907 bytes free.
		var keys []uint64
		for k := uint64(4); k <= 128; k += 4 {
			keys = append(keys, k)
		}
		keys = append(keys, 126)
		for k := uint64(2); k <= 62; k += 4 {
			keys = append(keys, k)
		}
		insert(keys...)
		commit(t, e)
		closeEngine(t, e)
		e = mount(t, d)
		if warm {
			if _, err := e.Tree(testTree).Lookup(testKey(128)); err != nil {
				t.Fatal(err)
			}
		}
		before, reads := e.Tree(testTree).Stats(), e.Stats().NodeReads
		insert(33)
		after := e.Tree(testTree).Stats()
		pushes, splits := after.LeafPushes-before.LeafPushes, after.LeafSplits-before.LeafSplits
		switch {
		case warm && (pushes != 1 || splits != 0):
			t.Errorf("sibling in memory: %d pushes and %d splits, want a push", pushes, splits)
		case !warm && (pushes != 0 || splits != 1):
			t.Errorf("sibling on disk only: %d pushes and %d splits, want a split", pushes, splits)
		}
		// The insert's path is the root (read at mount) and the leaf.
		if n := e.Stats().NodeReads - reads; !warm && n > 1 {
			t.Errorf("the insert read %d nodes, want at most its leaf", n)
		}
		commit(t, e)
		check(t, e)
		closeEngine(t, e)
	}
}
