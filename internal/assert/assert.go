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

import (
	"fmt"
	"reflect"
	"unsafe"
)

// That panics with msg when cond is false.
func That(cond bool, msg string) {
	if !cond {
		panic("assertion failed: " + msg)
	}
}

// Thatf panics with the message that format and args make when cond is
// false. It formats only on failure and, when cond holds, allocates nothing
// (TestThatf_NoAllocs, BenchmarkThatf_Holds): the compiler keeps its
// boxed args on the caller's stack. Pass values — integers, strings,
// errors, structs — not pointers to the caller's locals: fail copies each
// value to the heap before formatting it, but not what a pointer points
// to.
func Thatf(cond bool, format string, args ...any) {
	if !cond {
		fail(format, args)
	}
}

// fail formats and panics. fmt.Sprintf leaks its arguments as far as the
// compiler can tell, which would move every boxed argument of every Thatf
// call to the heap, holding or not. So fail hides args from escape
// analysis, as the runtime's noescape does: the address goes through a
// uintptr, which the compiler does not trace (no call comes between taking
// the address and reading through it, so the stack cannot move in
// between; go:nocheckptr tells -race's pointer checks that the pointer
// rebuilt from nil is meant). Each value is then copied to the heap, so
// that fmt, which parks its current argument in a pooled heap printer,
// never holds a pointer into a stack that may move while it formats.
//
//go:noinline
//go:nocheckptr
func fail(format string, args []any) {
	addr := uintptr(unsafe.Pointer(&args))
	onStack := *(*[]any)(unsafe.Add(nil, addr))
	onHeap := make([]any, len(onStack))
	for i, a := range onStack {
		if a == nil {
			continue
		}
		v := reflect.ValueOf(a)
		c := reflect.New(v.Type()).Elem()
		c.Set(v)
		onHeap[i] = c.Interface()
	}
	panic("assertion failed: " + fmt.Sprintf(format, onHeap...))
}
