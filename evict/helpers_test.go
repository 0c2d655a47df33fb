package evict

import (
	"sync/atomic"
	"testing"
)

// node is the tests' Entry: a fixed size and a pin that tests flip.
type node struct {
	id     uint64
	bytes  int64
	pinned atomic.Bool
}

func (n *node) CacheBytes() int64 { return n.bytes }
func (n *node) Pinned() bool      { return n.pinned.Load() }

func newNode(id uint64, bytes int64, pinned bool) *node {
	n := &node{id: id, bytes: bytes}
	n.pinned.Store(pinned)
	return n
}

// newCache returns a cache that is checked (Check) when the test ends.
func newCache(t testing.TB, opts Options) *Cache[*node] {
	t.Helper()
	c := New[*node](opts)
	t.Cleanup(func() {
		if err := c.Check(); err != nil {
			t.Errorf("Check on the way out: %v", err)
		}
	})
	return c
}

// keys returns the set of keys cached in c.
func keys(c *Cache[*node]) map[uint64]bool {
	m := map[uint64]bool{}
	c.Range(func(key uint64, _ *node) bool {
		m[key] = true
		return true
	})
	return m
}

// pinnedBytes returns the bytes of the cached entries that are pinned now.
func pinnedBytes(c *Cache[*node]) int64 {
	var b int64
	c.Range(func(_ uint64, n *node) bool {
		if n.Pinned() {
			b += n.bytes
		}
		return true
	})
	return b
}

// sumBytes returns the sum of the cached entries' CacheBytes.
func sumBytes(c *Cache[*node]) int64 {
	var b int64
	c.Range(func(_ uint64, n *node) bool {
		b += n.CacheBytes()
		return true
	})
	return b
}
