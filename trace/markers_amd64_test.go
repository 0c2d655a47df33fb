package trace

import (
	"bytes"
	"reflect"
	"runtime"
	"testing"
	"unsafe"
)

// nop5Ret is what a uprobe must find at a marker's PC: the 5-byte NOP Linux
// optimises into a trampoline call, then RET.
var nop5Ret = []byte{0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc3}

// codeAt returns n bytes of machine code at pc. The pc comes from the linker
// (text is never moved or freed), so reading it is safe; going through
// *unsafe.Pointer keeps vet's unsafeptr check from mistaking it for pointer
// arithmetic.
func codeAt(pc uintptr, n int) []byte {
	p := *(*unsafe.Pointer)(unsafe.Pointer(&pc))
	return unsafe.Slice((*byte)(p), n)
}

// TestMarkerPCs_Body_IsNop5 proves Invariant 1: the PCs MarkerPCs publishes
// are the entries of the marker functions, and the code there is nop5 + RET,
// which is what an attached uprobe will hit.
func TestMarkerPCs_Body_IsNop5(t *testing.T) {
	begin, end := MarkerPCs()
	phaseBegin, phaseEnd := PhaseMarkerPCs()
	for _, m := range []struct {
		name string
		pc   uintptr
		fn   any
	}{
		{"ustore/trace.LockWaitBegin", begin, LockWaitBegin},
		{"ustore/trace.LockWaitEnds", end, LockWaitEnds},
		{"ustore/trace.PhaseBegin", phaseBegin, PhaseBegin},
		{"ustore/trace.PhaseEnd", phaseEnd, PhaseEnd},
	} {
		if m.pc == 0 {
			t.Fatalf("%s: MarkerPCs returned 0", m.name)
		}
		f := runtime.FuncForPC(m.pc)
		if f == nil || f.Name() != m.name || f.Entry() != m.pc {
			t.Fatalf("%s: pc %#x is not that function's entry (FuncForPC: %v)", m.name, m.pc, describe(f))
		}
		if got := codeAt(m.pc, len(nop5Ret)); !bytes.Equal(got, nop5Ret) {
			t.Fatalf("%s: code at %#x is % x, want % x", m.name, m.pc, got, nop5Ret)
		}
		// Not asserted (toolchain detail), but it is why MarkerPCs exists:
		// the func value leads to a wrapper whose code is not the NOP.
		wrapper := reflect.ValueOf(m.fn).Pointer()
		t.Logf("%s: body %#x (% x), func value %#x (% x)",
			m.name, m.pc, codeAt(m.pc, 6), wrapper, codeAt(wrapper, 6))
	}
	if begin == end || phaseBegin == phaseEnd || begin == phaseBegin {
		t.Fatalf("markers share an address: %#x %#x %#x %#x", begin, end, phaseBegin, phaseEnd)
	}
}

func describe(f *runtime.Func) string {
	if f == nil {
		return "no function"
	}
	return f.Name()
}
