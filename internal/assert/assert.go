// Package assert holds ustore's always-on assertions: programmer errors
// (a broken invariant, an impossible state) panic with a message that names
// the invariant. Operating errors — bad input, I/O errors, corruption read
// from disk — are error values, never assertions.
//
// Every package may import assert (internal/lint allows it everywhere): it
// imports nothing of ustore's, so it adds no edge to the import graph
// (docs/ARCHITECTURE.md).
//
// Keep conditions cheap: they run in production. Checks that walk a whole
// structure belong behind the invariants build tag (engine/invariants_on.go,
// evict/invariants_on.go). As TigerBeetle asks, assertions come in pairs:
// the same fact checked where it is written and where it is read.
package assert

import "fmt"

// That panics with msg when cond is false.
func That(cond bool, msg string) {
	if !cond {
		panic("assertion failed: " + msg)
	}
}

// Failf panics with the message that format and args make. The caller
// checks the condition itself, so that the arguments are boxed only on the
// failing path:
//
//	if start+length > size {
//		assert.Failf("engine: extent [%d, +%d) past the device's %d bytes", start, length, size)
//	}
//
// A Thatf(cond, format, args...) that tests cond inside costs its caller
// the boxing on every call, holding or not: fmt.Sprintf leaks its
// arguments, so the compiler moves every boxed value and the variadic
// slice to the heap — 4 allocations and ~53 ns for three integers and a
// string, against 0 and ~0.5 ns for this form (BenchmarkFailf_Holds,
// BenchmarkThatf_Plain_Holds). Hiding the arguments from escape analysis
// with unsafe made Thatf allocation-free too (~3.4 ns), but unsafe belongs
// to ring/ only; this form needs none and is faster still.
//
//go:noinline
func Failf(format string, args ...any) {
	panic("assertion failed: " + fmt.Sprintf(format, args...))
}
