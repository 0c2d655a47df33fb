package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkExtentSet_Fragmented is the free set after random overwrites:
// n free 4 KiB holes, each between two allocated blocks. An op takes a
// random hole (a data block allocated into it) and gives it back (the
// block freed again), as writeback and a commit's unpin do: with a sorted
// slice each was a copy of half the set.
func BenchmarkExtentSet_Fragmented(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("holes=%d", n), func(b *testing.B) {
			const blk = 4096
			s := extentSet{big: 16384}
			for i := range n {
				s.add(uint64(2*i)*blk, blk)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for b.Loop() {
				at := uint64(2*rng.IntN(n)) * blk
				if !s.remove(at, blk) || !s.add(at, blk) {
					b.Fatal("the hole was not in the set")
				}
			}
		})
	}
}
