package engine

import (
	"fmt"
	"testing"

	"ustore/journal"
)

// A transaction's nodes carry its id as their generation; a log
// sub-transaction's carry its LogGen; both print in decimal.
func TestGeneration_Of(t *testing.T) {
	if g := TransGeneration(42); uint64(g) != 42 || g.Transid() != journal.Transid(42) || fmt.Sprint(g) != "42" {
		t.Errorf("TransGeneration(42) = %v (Transid %v)", g, g.Transid())
	}
	lg := MakeLogGen(7, 3)
	if g := lg.Generation(); uint64(g) != uint64(lg) || fmt.Sprint(g) != fmt.Sprint(uint64(lg)) {
		t.Errorf("MakeLogGen(7, 3).Generation() = %v, want %d", g, uint64(lg))
	}
}

// A node's header and its parent's pointer hold the generation as the u64
// they always held: written and read back unchanged.
func TestExtentBuffer_Generation_RoundTrip(t *testing.T) {
	eb := &ExtentBuffer{bytenr: firstAllocatable, data: make([]byte, NodeSizeMin)}
	gen := MakeLogGen(1<<20, LogSubMax).Generation()
	eb.initHeader([16]byte{}, gen, FSTreeID, 1)
	if eb.Generation() != gen || le.Uint64(eb.data[hdrGeneration:]) != uint64(gen) {
		t.Fatalf("header generation %v (bytes %d), want %v", eb.Generation(), le.Uint64(eb.data[hdrGeneration:]), gen)
	}
	eb.setPtr(0, MinKey, firstAllocatable, TransGeneration(9))
	if eb.PtrGeneration(0) != 9 || le.Uint64(eb.ptr(0)[keySize+8:]) != 9 {
		t.Fatalf("pointer generation %v", eb.PtrGeneration(0))
	}
}
