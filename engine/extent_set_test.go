package engine

import "testing"

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
