package engine

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestExtentSet_FindFrom_WrapsIntoCursorExtent: with the cursor near the
// end of the only free extent, the room before the cursor is found (the
// live-server fuzzer freed nearly the whole device, and a commit then
// failed with "no free extent of 16384 bytes" with 267 MB free, turning
// the store read-only).
func TestExtentSet_FindFrom_WrapsIntoCursorExtent(t *testing.T) {
	s := extentSet{big: 16384}
	s.add(1<<20, 256<<20)
	cursor := uint64(1<<20+256<<20) - 4096
	start, ok := s.findFrom(cursor, 16384)
	if !ok || start != 1<<20 {
		t.Fatalf("findFrom: %d, %v; want the extent's start %d", start, ok, 1<<20)
	}
	// Two extents, the cursor at the end of the second: the first one.
	s2 := extentSet{big: 16384}
	s2.add(0, 65536)
	s2.add(1<<20, 32768)
	if start, ok := s2.findFrom(1<<20+30000, 16384); !ok || start != 0 {
		t.Fatalf("findFrom: %d, %v; want 0", start, ok)
	}
	// No room anywhere: none.
	if _, ok := s2.findFrom(0, 1<<20); ok {
		t.Fatal("found room that is not there")
	}
}

// TestExtentSet_AddRemove_BytesComeBackExactly: random frees and
// allocations keep the running totals equal to a walk of the set, and
// every byte taken comes back (the pair extentSet.assertSum checks on each
// change, and check walks under the invariants tag).
func TestExtentSet_AddRemove_BytesComeBackExactly(t *testing.T) {
	const lo, hi = 1 << 20, 1<<20 + 4<<20
	s := extentSet{big: 16384}
	s.add(lo, hi-lo)
	var taken []extent
	seed := uint64(1)
	next := func(n uint64) uint64 {
		seed = seed*6364136223846793005 + 1442695040888963407
		return (seed >> 33) % n
	}
	for i := 0; i < 2000; i++ {
		if len(taken) > 0 && next(2) == 0 {
			j := next(uint64(len(taken)))
			x := taken[j]
			taken = append(taken[:j], taken[j+1:]...)
			if !s.add(x.start, x.length) {
				t.Fatalf("add of taken [%d, +%d) refused", x.start, x.length)
			}
		} else {
			length := (1 + next(8)) * SectorSize
			start, ok := s.findFrom(lo+next(hi-lo), length)
			if !ok {
				continue
			}
			if !s.remove(start, length) {
				t.Fatalf("remove of found [%d, +%d) refused", start, length)
			}
			taken = append(taken, extent{start, length})
		}
		if err := s.check(lo, hi); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	for _, x := range taken {
		s.add(x.start, x.length)
	}
	if s.len() != 1 || s.total() != hi-lo || s.bigSum != hi-lo {
		t.Fatalf("after giving everything back: %d extents, %d bytes (%d big); want one of %d", s.len(), s.total(), s.bigSum, hi-lo)
	}
}

// TestExtentSet_Check_CatchesDrift: check finds a running total that no
// longer matches the extents, and extents outside the device.
func TestExtentSet_Check_CatchesDrift(t *testing.T) {
	s := extentSet{big: 16384}
	s.add(1<<20, 8192)
	s.add(2<<20, 65536)
	if err := s.check(1<<20, 4<<20); err != nil {
		t.Fatal(err)
	}
	if err := s.check(1<<20, 2<<20); err == nil {
		t.Fatal("an extent past the device's end passed")
	}
	s.sum++
	if err := s.check(1<<20, 4<<20); err == nil {
		t.Fatal("a drifted sum passed")
	}
}

// TestAllocator_Unpin_OutsideDevice: a freed extent outside the device
// (a file extent item read from a damaged disk) is corruption at unpin,
// and never enters the free set.
func TestAllocator_Unpin_OutsideDevice(t *testing.T) {
	a := newAllocator(8<<20, 16384)
	a.freeSet.add(firstAllocatable, 4<<20)
	a.free(5, 8<<20-4096, 8192)
	if err := a.unpin(5); !errors.Is(err, ErrCorruption) {
		t.Fatalf("unpin: %v, want ErrCorruption", err)
	}
	if a.freeSet.overlaps(8<<20-4096, 8192) {
		t.Fatal("the extent outside the device entered the free set")
	}
}

// TestAllocator_AssertTaken_Panics: handing out an extent that is still
// free is a programmer error.
func TestAllocator_AssertTaken_Panics(t *testing.T) {
	a := newAllocator(8<<20, 16384)
	a.freeSet.add(firstAllocatable, 4<<20)
	defer func() {
		if msg, _ := recover().(string); !strings.Contains(msg, "taken but still free") {
			t.Fatalf("recovered %q, want a 'taken but still free' assertion", msg)
		}
	}()
	a.assertTaken(firstAllocatable, 16384)
}

// TestExtentSet_Model: random adds, removes (refused ones too), overlaps
// and findFrom calls give the answers a bitmap of free sectors gives —
// findFrom its exact choice: the first room at or after the cursor, else
// the first from the lowest extent, the cursor's own extent taken whole —
// and the set stays merged, indexed and totalled (check).
func TestExtentSet_Model(t *testing.T) {
	const sectors = 512
	const lo, hi = 0, sectors * SectorSize
	var free [sectors]bool
	s := extentSet{big: 4 * SectorSize}
	rng := rand.New(rand.NewPCG(7, 11))
	// freeIn counts the free sectors of [a, a+n).
	freeIn := func(a, n uint64) uint64 {
		k := uint64(0)
		for i := a; i < a+n; i++ {
			if free[i] {
				k++
			}
		}
		return k
	}
	allFree := func(a, n uint64) bool { return freeIn(a, n) == n }
	noneFree := func(a, n uint64) bool { return freeIn(a, n) == 0 }
	// findModel is findFrom on the bitmap's runs of free sectors.
	findModel := func(cursor, n uint64) (uint64, bool) {
		c := cursor / SectorSize
		var runs [][2]uint64
		for i := uint64(0); i < sectors; i++ {
			switch {
			case !free[i]:
			case i > 0 && free[i-1]:
				runs[len(runs)-1][1] = i + 1
			default:
				runs = append(runs, [2]uint64{i, i + 1})
			}
		}
		first := len(runs)
		for j, r := range runs {
			if r[1] > c {
				first = j
				break
			}
		}
		for j := first; j < len(runs); j++ {
			a := max(runs[j][0], c)
			if j != first {
				a = runs[j][0]
			}
			if runs[j][1] >= a+n {
				return a * SectorSize, true
			}
		}
		for j := 0; j < len(runs) && j <= first; j++ {
			if runs[j][1]-runs[j][0] >= n {
				return runs[j][0] * SectorSize, true
			}
		}
		return 0, false
	}
	for step := range 20000 {
		a := rng.Uint64N(sectors)
		n := 1 + rng.Uint64N(min(12, sectors-a))
		start, length := a*SectorSize, n*SectorSize
		switch op := rng.IntN(4); op {
		case 0, 1: // add: refused unless no sector of it is free; remove: unless it lies inside one free run
			adding := op == 0
			name, do, want := "remove", s.remove, allFree(a, n)
			if adding {
				name, do, want = "add", s.add, noneFree(a, n)
			}
			if got := do(start, length); got != want {
				t.Fatalf("step %d: %s [%d, +%d) = %v, want %v", step, name, a, n, got, want)
			}
			for i := a; want && i < a+n; i++ {
				free[i] = adding
			}
		case 2:
			if got, want := s.overlaps(start, length), !noneFree(a, n); got != want {
				t.Fatalf("step %d: overlaps [%d, +%d) = %v, want %v", step, a, n, got, want)
			}
		default:
			got, ok := s.findFrom(start, length)
			want, wantOK := findModel(start, n)
			if got != want || ok != wantOK {
				t.Fatalf("step %d: findFrom(%d, %d sectors) = %d, %v; want %d, %v", step, a, n, got/SectorSize, ok, want/SectorSize, wantOK)
			}
		}
		if err := s.check(lo, hi); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
}
