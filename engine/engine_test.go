package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"

	"ustore/dev"
	"ustore/dev/memdev"
)

const testTree = 300

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// newTestEngine formats a memdev and mounts it; the engine is checked and
// closed when the test ends.
func newTestEngine(t *testing.T, size int64, nodeSize int) (*Engine, *memdev.Device) {
	t.Helper()
	d := memdev.New(size)
	if err := Mkfs(d, MkfsOptions{NodeSize: nodeSize}); err != nil {
		t.Fatal(err)
	}
	e := mount(t, d)
	return e, d
}

func mount(t *testing.T, d dev.Device) *Engine {
	t.Helper()
	e, err := Mount(d, Options{Logger: quiet(), CommitInterval: 60e9})
	if err != nil {
		t.Fatalf("Mount: %v", err)
	}
	return e
}

func commit(t *testing.T, e *Engine) {
	t.Helper()
	if _, err := e.Commit(context.Background()); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

func check(t *testing.T, e *Engine) {
	t.Helper()
	if err := Check(e).Err(); err != nil {
		t.Fatalf("fsck: %v", err)
	}
}

func closeEngine(t *testing.T, e *Engine) {
	t.Helper()
	if err := e.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func testKey(i uint64) Key { return Key{ObjectID: i, Type: TypeTest} }

func testValue(i uint64, n int) []byte {
	v := make([]byte, n)
	for j := range v {
		v[j] = byte(i*7 + uint64(j))
	}
	if n >= 8 {
		binary.LittleEndian.PutUint64(v, i)
	}
	return v
}

func TestEngine_InsertLookupCommitRemount(t *testing.T) {
	for _, ns := range []int{4096, 16384} {
		t.Run(fmt.Sprint(ns), func(t *testing.T) {
			e, d := newTestEngine(t, 64<<20, ns)
			tr, err := e.Start()
			if err != nil {
				t.Fatal(err)
			}
			tree, err := e.CreateTree(tr, testTree)
			if err != nil {
				t.Fatal(err)
			}
			const n = 5000
			rng := rand.New(rand.NewPCG(1, 2))
			perm := rng.Perm(n)
			for _, i := range perm {
				if err := tree.InsertItem(tr, testKey(uint64(i)), testValue(uint64(i), 100)); err != nil {
					t.Fatalf("insert %d: %v", i, err)
				}
			}
			tr.End()
			for i := 0; i < n; i++ {
				v, err := tree.Lookup(testKey(uint64(i)))
				if err != nil || !bytes.Equal(v, testValue(uint64(i), 100)) {
					t.Fatalf("lookup %d: %v", i, err)
				}
			}
			commit(t, e)
			check(t, e)
			closeEngine(t, e)
			e = mount(t, d)
			tree = e.Tree(testTree)
			if tree == nil {
				t.Fatal("tree lost at remount")
			}
			count := 0
			err = tree.Iterate(MinKey, func(k Key, data []byte) bool {
				if k != testKey(uint64(count)) || !bytes.Equal(data, testValue(uint64(count), 100)) {
					t.Fatalf("item %d: key %v", count, k)
				}
				count++
				return true
			})
			if err != nil || count != n {
				t.Fatalf("iterate: %d items, %v", count, err)
			}
			check(t, e)
			// Delete every other item, then all.
			tr, _ = e.Start()
			for i := 0; i < n; i += 2 {
				if err := tree.DeleteItem(tr, testKey(uint64(i))); err != nil {
					t.Fatalf("delete %d: %v", i, err)
				}
			}
			tr.End()
			commit(t, e)
			check(t, e)
			tr, _ = e.Start()
			if got, err := tree.DeleteRange(tr, MinKey, MaxKey); err != nil || got != n/2 {
				t.Fatalf("delete range: %d, %v", got, err)
			}
			tr.End()
			commit(t, e)
			check(t, e)
			closeEngine(t, e)
		})
	}
}
