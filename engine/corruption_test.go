package engine

import (
	"errors"
	"testing"

	"ustore/dev"
)

// TestEngine_Corruption_BitFlip flips one bit in a leaf on disk: reads of
// that leaf fail with ErrCorruption, everything else stays readable, fsck
// reports it, and nothing panics.
func TestEngine_Corruption_BitFlip(t *testing.T) {
	e, d := newTestEngine(t, 64<<20, 4096)
	tr, _ := e.Start()
	tree, _ := e.CreateTree(tr, testTree)
	const n = 3000
	for i := uint64(0); i < n; i++ {
		if err := tree.InsertItem(tr, testKey(i), testValue(i, 60)); err != nil {
			t.Fatal(err)
		}
	}
	tr.End()
	commit(t, e)
	// Find the leaf holding key 1500.
	var p Path
	if _, err := tree.SearchSlot(nil, testKey(1500), &p, 0, false); err != nil {
		t.Fatal(err)
	}
	leaf, _ := p.Leaf()
	bytenr, first, last := leaf.bytenr, leaf.Key(0), leaf.Key(leaf.ItemCount()-1)
	p.Release()
	closeEngine(t, e)

	buf := dev.AlignedBuffer(4096)
	if err := d.Read([]dev.IO{{Off: int64(bytenr), Buf: buf}}); err != nil {
		t.Fatal(err)
	}
	buf[3000] ^= 0x10
	if err := d.WriteDurable([]dev.IO{{Off: int64(bytenr), Buf: buf}}); err != nil {
		t.Fatal(err)
	}

	e = mount(t, d)
	tree = e.Tree(testTree)
	for i := uint64(0); i < n; i++ {
		k := testKey(i)
		_, err := tree.Lookup(k)
		inLeaf := !k.Less(first) && !last.Less(k)
		switch {
		case inLeaf && !errors.Is(err, ErrCorruption):
			t.Fatalf("key %d in the damaged leaf: %v, want ErrCorruption", i, err)
		case !inLeaf && err != nil:
			t.Fatalf("key %d outside the damaged leaf: %v", i, err)
		}
	}
	rep := Check(e)
	if rep.Err() == nil || !errors.Is(rep.Problems[0], ErrCorruption) && len(rep.Problems) == 0 {
		t.Fatalf("fsck found nothing in a damaged leaf")
	}
	t.Logf("fsck: %v", rep.Problems[0])
	if e.Stats().Corrupt == 0 {
		t.Fatal("corrupt reads not counted")
	}
}

// FuzzExtentBuffer_Verify feeds arbitrary bytes to node verification and
// every accessor a verified node allows: nothing may panic, and a node that
// verifies must have a consistent shape.
func FuzzExtentBuffer_Verify(f *testing.F) {
	var fsid [16]byte
	good := newExtentBuffer(1<<20, make([]byte, 4096), nil)
	good.initHeader(fsid, 5, testTree, 0)
	leafAppend(good, testKey(1), []byte("hello"))
	leafAppend(good, testKey(2), []byte("world!"))
	good.seal()
	f.Add(append([]byte(nil), good.data...))
	f.Add(make([]byte, 4096))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Every input is a node: cut or zero-padded to the node size, so
		// that the mutator's length changes are not all thrown away (and
		// minimizing an input does not crawl through rejected lengths).
		node := make([]byte, 4096)
		copy(node, data)
		eb := newExtentBuffer(1<<20, node, nil)
		// Checksum aside, the shape check must hold up alone.
		if eb.checkShape(4096) != nil {
			return
		}
		for i := 0; i < eb.ItemCount(); i++ {
			_ = eb.Key(i)
			if eb.IsLeaf() {
				_ = eb.ItemData(i)
			} else {
				_ = eb.BlockPtr(i)
			}
		}
		_ = eb.verify(fsid, testTree, -1, 4096)
	})
}

// TestEngine_NoSpace fills a small device until ErrNoSpace, commits what
// fitted, deletes, and writes again: nothing is lost, fsck stays clean.
func TestEngine_NoSpace(t *testing.T) {
	e, d := newTestEngine(t, 4<<20, 4096) // 3 MiB allocatable
	tr, _ := e.Start()
	tree, _ := e.CreateTree(tr, testTree)
	tr.End()
	commit(t, e)
	m := model{}
	var i uint64
	for ; ; i++ {
		tr, err := e.Start()
		if err != nil {
			t.Fatal(err)
		}
		v := testValue(i, 900)
		err = tree.InsertItem(tr, testKey(i), v)
		tr.End()
		if errors.Is(err, ErrNoSpace) {
			break
		}
		if err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
		m[testKey(i)] = v
		if i%50 == 49 {
			if _, err := e.Commit(t.Context()); errors.Is(err, ErrNoSpace) {
				break
			} else if err != nil {
				t.Fatal(err)
			}
		}
		if i > 100000 {
			t.Fatal("a 4 MiB device never filled")
		}
	}
	t.Logf("ENOSPC after %d items", i)
	compareTree(t, tree, m)
	// Everything that fitted commits, and the store stays usable.
	commit(t, e)
	check(t, e)
	// Deletes CoW leaves too, and the blocks they free come back only at
	// commit: on a full device they run on the reserve, in transactions
	// small enough for it.
	deleted := 0
	for k := range m {
		if deleted*2 >= len(m) {
			break
		}
		tr, _ := e.Start()
		err := tree.DeleteItem(tr, k)
		tr.End()
		if err != nil {
			t.Fatalf("delete %d on a full device: %v", deleted, err)
		}
		delete(m, k)
		deleted++
		if deleted%10 == 0 {
			commit(t, e)
		}
	}
	commit(t, e)
	commit(t, e) // the space freed is reusable once its commit is durable
	tr, _ = e.Start()
	for j := uint64(0); j < 20; j++ {
		k := testKey(1_000_000 + j)
		if err := tree.InsertItem(tr, k, testValue(j, 900)); err != nil {
			t.Fatalf("insert after freeing space: %v", err)
		}
		m[k] = testValue(j, 900)
	}
	tr.End()
	commit(t, e)
	check(t, e)
	closeEngine(t, e)
	e = mount(t, d)
	compareTree(t, e.Tree(testTree), m)
	check(t, e)
	closeEngine(t, e)
}
