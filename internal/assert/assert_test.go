package assert

import (
	"strings"
	"testing"
)

func TestThat_Holds(t *testing.T) {
	That(true, "never shown")
	Thatf(true, "never shown %d", 1)
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

func TestThatf_Fails(t *testing.T) {
	defer func() {
		msg, _ := recover().(string)
		if !strings.HasPrefix(msg, "assertion failed: ") || !strings.Contains(msg, "extent [4096, +8192) past the device's 8192 bytes") {
			t.Fatalf("recovered %q", msg)
		}
	}()
	Thatf(false, "extent [%d, +%d) past the device's %d bytes", 4096, 8192, 8192)
}

// TestThatf_NoAllocs: a holding assertion with integer and string arguments
// allocates nothing — its message is built only on failure.
func TestThatf_NoAllocs(t *testing.T) {
	var (
		start, length, size uint64 = 4096, 8192, 1 << 20
		name                       = "engine"
	)
	n := testing.AllocsPerRun(1000, func() {
		Thatf(start+length <= size, "%s: extent [%d, +%d) past the device's %d bytes", name, start, length, size)
		start++
	})
	if n != 0 {
		t.Fatalf("Thatf allocated %v times per holding call; want 0", n)
	}
}

func BenchmarkThatf_Holds(b *testing.B) {
	var start, length, size uint64 = 4096, 8192, 1 << 40
	b.ReportAllocs()
	for b.Loop() {
		Thatf(start+length <= size, "extent [%d, +%d) past the device's %d bytes", start, length, size)
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

// TestThatf_Fails_Values: values of every kind reach the message intact
// after fail copies them off the caller's stack.
func TestThatf_Fails_Values(t *testing.T) {
	var big uint64 = 1 << 40
	defer func() {
		msg, _ := recover().(string)
		want := "assertion failed: 1099511627776 s point {x:1 y:2} <nil> err true"
		if msg != want {
			t.Fatalf("recovered %q, want %q", msg, want)
		}
	}()
	Thatf(false, "%d %s %v %+v %v %v %v", big, "s", point{1, 2}, struct{ x, y int }{1, 2}, nil, errString("err"), true)
}

type errString string

func (e errString) Error() string { return string(e) }
