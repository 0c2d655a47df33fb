package memdev

import (
	"testing"
	"time"

	"ustore/dev"
)

// TestDevice_HoldNext: a held call does nothing until released; a
// WriteDurable's own writes are not Writes that HoldWrite holds.
func TestDevice_HoldNext(t *testing.T) {
	d := New(1 << 20)
	buf := dev.AlignedBuffer(dev.SectorSize)
	h := d.HoldNext(HoldWrite)
	if err := d.WriteDurable([]dev.IO{{Off: 0, Buf: buf}}); err != nil {
		t.Fatalf("WriteDurable with a Write held: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- d.Write([]dev.IO{{Off: 4096, Buf: buf}}) }()
	<-h.Held()
	seq := d.Seq()
	select {
	case err := <-done:
		t.Fatalf("held Write returned: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	if d.Seq() != seq {
		t.Fatalf("held Write recorded an operation: seq %d → %d", seq, d.Seq())
	}
	h.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d.Seq() != seq+1 {
		t.Fatalf("released Write: seq %d → %d, want one operation", seq, d.Seq())
	}
}
