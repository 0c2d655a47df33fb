package devtest

import (
	"errors"
	"testing"

	"ustore/dev"
)

// testClose: after Close every call that does I/O fails with dev.ErrClosed,
// and a second Close does not panic (it may report dev.ErrClosed).
func testClose(t *testing.T, d dev.Device) {
	const s = dev.SectorSize
	mustWrite(t, d, dev.IO{Off: 0, Buf: pattern(s, 0, 15)})
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	calls := []struct {
		name string
		call func() error
	}{
		{"Read", func() error { return d.Read([]dev.IO{{Off: 0, Buf: dev.AlignedBuffer(s)}}) }},
		{"Write", func() error { return d.Write([]dev.IO{{Off: 0, Buf: dev.AlignedBuffer(s)}}) }},
		{"Flush", d.Flush},
		{"WriteDurable", func() error { return d.WriteDurable([]dev.IO{{Off: 0, Buf: dev.AlignedBuffer(s)}}) }},
	}
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, dev.ErrClosed) {
			t.Errorf("%s after Close: got %v, want errors.Is(err, dev.ErrClosed)", c.name, err)
		}
	}
	if err := d.Close(); err != nil && !errors.Is(err, dev.ErrClosed) {
		t.Errorf("second Close: got %v, want nil or dev.ErrClosed", err)
	}
}
