package engine

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// checkExtentSetIndex recomputes what extentSet keeps incrementally.
func checkExtentSetIndex(t *testing.T, s *extentSet) {
	t.Helper()
	var sum, bigSum uint64
	smalls := 0
	s.each(func(x extent) bool {
		sum += x.length
		if x.length >= s.big {
			bigSum += x.length
			return true
		}
		smalls++
		if _, ok := s.small[x.length][x.start]; !ok {
			t.Fatalf("small extent %v not indexed", x)
		}
		return true
	})
	indexed := 0
	for _, m := range s.small {
		indexed += len(m)
	}
	if sum != s.sum || bigSum != s.bigSum || indexed != smalls {
		t.Fatalf("index: sum %d/%d big %d/%d small %d/%d", s.sum, sum, s.bigSum, bigSum, indexed, smalls)
	}
}

// Data churn — random small allocations and frees, as random overwrites
// make — never takes the metadata reserve out of the extents a node fits
// in: a commit can always find blocks for its nodes. Before small data went
// to small holes first, this workload left no free 16 KiB extent and the
// engine turned read-only at its next commit.
func TestAllocator_DataLeavesRoomForNodes(t *testing.T) {
	const size, node = 64 << 20, 16 << 10
	a := newAllocator(size, node)
	a.freeSet.add(firstAllocatable, size-firstAllocatable)
	rng := rand.New(rand.NewPCG(7, 8))
	var held []extent
	for i := range 200000 {
		if len(held) > 0 && rng.IntN(3) == 0 {
			k := rng.IntN(len(held))
			x := held[k]
			held[k] = held[len(held)-1]
			held = held[:len(held)-1]
			if err := a.unreserveData(x.start, x.length); err != nil {
				t.Fatal(err)
			}
		} else {
			n := uint64(1+rng.IntN(3)) * SectorSize
			if rng.IntN(50) == 0 {
				n = 256 * SectorSize
			}
			start, err := a.reserveData(n)
			if err != nil && !errors.Is(err, ErrNoSpace) {
				t.Fatal(err)
			}
			if err == nil {
				held = append(held, extent{start, n})
			}
		}
		if a.freeSet.bigSum < a.reserve {
			t.Fatalf("step %d: %d bytes free in extents a node fits in, under the reserve %d", i, a.freeSet.bigSum, a.reserve)
		}
		if i%997 == 0 {
			checkExtentSetIndex(t, &a.freeSet)
		}
	}
	if _, err := a.allocMeta(1, node, true); err != nil {
		t.Fatalf("no block for a node after the churn: %v", err)
	}
}
