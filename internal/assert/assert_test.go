package assert

import (
	"fmt"
	"strings"
	"testing"
)

func TestThat_Holds(t *testing.T) {
	That(true, "never shown")
}

func TestThat_Fails(t *testing.T) {
	defer func() {
		msg, _ := recover().(string)
		if msg != "assertion failed: x is odd" {
			t.Fatalf("recovered %q", msg)
		}
	}()
	That(false, "x is odd")
}

func TestFailf_Fails(t *testing.T) {
	defer func() {
		msg, _ := recover().(string)
		if !strings.HasPrefix(msg, "assertion failed: ") || !strings.Contains(msg, "extent [4096, +8192) past the device's 8192 bytes") {
			t.Fatalf("recovered %q", msg)
		}
	}()
	var start, length, size uint64 = 4096, 8192, 8192
	if start+length > size {
		Failf("extent [%d, +%d) past the device's %d bytes", start, length, size)
	}
	t.Fatal("Failf returned")
}

// TestFailf_NoAllocs: a holding assertion in the house form — the caller
// tests, Failf formats — allocates nothing, whatever its arguments: they
// are boxed only on the failing path. Assertions sit on hot paths (the
// allocator, the fsync path), so this is a budget, not a nicety.
func TestFailf_NoAllocs(t *testing.T) {
	var (
		start, length, size uint64 = 4096, 8192, 1 << 20
		name                       = "engine"
		err                 error
	)
	n := testing.AllocsPerRun(1000, func() {
		if start+length > size || err != nil {
			Failf("%s: extent [%d, +%d) past the device's %d bytes: %v", name, start, length, size, err)
		}
		start++
	})
	if n != 0 {
		t.Fatalf("a holding assertion allocated %v times per call; want 0", n)
	}
}

// thatfPlain is the Thatf this package does not have: the condition tested
// inside, the arguments boxed by every caller. It is here to measure what
// the house form saves (BenchmarkThatf_Plain_Holds).
func thatfPlain(cond bool, format string, args ...any) {
	if !cond {
		failPlain(format, args)
	}
}

//go:noinline
func failPlain(format string, args []any) {
	panic("assertion failed: " + fmt.Sprintf(format, args...))
}

func BenchmarkFailf_Holds(b *testing.B) {
	var start, length, size uint64 = 4096, 8192, 1 << 40
	name := "engine"
	b.ReportAllocs()
	for b.Loop() {
		if start+length > size {
			Failf("%s: extent [%d, +%d) past the device's %d bytes", name, start, length, size)
		}
		start++
	}
}

func BenchmarkThatf_Plain_Holds(b *testing.B) {
	var start, length, size uint64 = 4096, 8192, 1 << 40
	name := "engine"
	b.ReportAllocs()
	for b.Loop() {
		thatfPlain(start+length <= size, "%s: extent [%d, +%d) past the device's %d bytes", name, start, length, size)
		start++
	}
}

func BenchmarkThat_Holds(b *testing.B) {
	var start, length, size uint64 = 4096, 8192, 1 << 40
	b.ReportAllocs()
	for b.Loop() {
		That(start+length <= size, "extent past the device")
		start++
	}
}

type point struct{ x, y int }

func (p point) String() string { return "point" }

// TestFailf_Fails_Values: values of every kind reach the message intact.
func TestFailf_Fails_Values(t *testing.T) {
	var big uint64 = 1 << 40
	defer func() {
		msg, _ := recover().(string)
		want := "assertion failed: 1099511627776 s point {x:1 y:2} <nil> err true"
		if msg != want {
			t.Fatalf("recovered %q, want %q", msg, want)
		}
	}()
	Failf("%d %s %v %+v %v %v %v", big, "s", point{1, 2}, struct{ x, y int }{1, 2}, nil, errString("err"), true)
}

type errString string

func (e errString) Error() string { return string(e) }
