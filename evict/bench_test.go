package evict

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
)

const benchNodeBytes = 16 << 10 // a default-size B-tree node

// BenchmarkCache_GetHit: parallel hits, the read path of the engine's
// searches, on a small cache (fits the CPU caches: the cost of the code)
// and a large one (64Ki nodes, 1 GiB of budget: the cost of memory), each
// with one shard (one RWMutex for all) and with the default shard count.
// Run with -cpu 1,4,16 to see it scale.
func BenchmarkCache_GetHit(b *testing.B) {
	for _, entries := range []uint64{1 << 10, 1 << 16} {
		for _, shards := range []int{1, 0} {
			name := fmt.Sprintf("entries=%d/shards=%d", entries, shards)
			if shards == 0 {
				name = fmt.Sprintf("entries=%d/shards=default", entries)
			}
			b.Run(name, func(b *testing.B) { benchGetHit(b, entries, shards) })
		}
	}
}

func benchGetHit(b *testing.B, entries uint64, shards int) {
	c := New[*node](Options{BudgetBytes: int64(entries) * benchNodeBytes, Shards: shards})
	for k := range entries {
		c.Add(k*benchNodeBytes, newNode(k, benchNodeBytes, false))
	}
	var seed atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		x := seed.Add(0x9E3779B97F4A7C15) | 1
		for pb.Next() {
			x ^= x << 13 // xorshift64: no shared state between goroutines
			x ^= x >> 7
			x ^= x << 17
			if _, ok := c.Get((x % entries) * benchNodeBytes); !ok {
				b.Fatal("miss")
			}
		}
	})
}

// BenchmarkCache_AddEvict: each Add of a new node into a full cache of 4Ki
// nodes evicts one, with OnEvict set.
func BenchmarkCache_AddEvict(b *testing.B) {
	const entries = 1 << 12
	evicted := 0
	c := New[*node](Options{BudgetBytes: entries * benchNodeBytes, OnEvict: func(uint64, Entry) { evicted++ }})
	nodes := make([]*node, entries*2)
	for i := range nodes {
		nodes[i] = newNode(uint64(i), benchNodeBytes, false)
	}
	for k := range uint64(entries) {
		c.Add(k*benchNodeBytes, nodes[k])
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		k := uint64(entries + i)
		c.Add(k*benchNodeBytes, nodes[k%uint64(len(nodes))])
	}
	b.StopTimer()
	if evicted < b.N {
		b.Fatalf("%d evictions for %d Adds", evicted, b.N)
	}
}

// BenchmarkCache_Clear: the bulk teardown of a cache, 1 entry in 64
// pinned, at sizes 8× apart. Clear is one walk of each ring plus a small
// map for the pinned entries — linear, the 2013 btrfs lesson — so the
// ns/entry metric rises with the size only as the walk leaves the CPU
// caches, never with the number of entries as such.
func BenchmarkCache_Clear(b *testing.B) {
	for _, entries := range []int{1 << 16, 1 << 19} {
		b.Run(fmt.Sprintf("entries=%d", entries), func(b *testing.B) {
			nodes := make([]*node, entries)
			for i := range nodes {
				nodes[i] = newNode(uint64(i), benchNodeBytes, i%64 == 0)
			}
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				c := New[*node](Options{BudgetBytes: int64(entries) * benchNodeBytes})
				for k, n := range nodes {
					c.Add(uint64(k)*benchNodeBytes, n)
				}
				runtime.GC() // not the filling's garbage collection
				b.StartTimer()
				if left := c.Clear(); left != entries/64 {
					b.Fatalf("%d pinned left", left)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*entries), "ns/entry")
		})
	}
}
