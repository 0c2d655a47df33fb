package devtest

import (
	"testing"

	"ustore/dev"
)

// testFlush: Flush succeeds with writes pending and with none, and the data
// stays readable. (Whether it is durable only a crashable device can show.)
func testFlush(t *testing.T, d dev.Device) {
	if err := d.Flush(); err != nil {
		t.Fatalf("Flush with nothing written: %v", err)
	}
	off := int64(50 * dev.SectorSize)
	mustWrite(t, d, dev.IO{Off: off, Buf: pattern(8*dev.SectorSize, off, 11)})
	if err := d.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if err := d.Flush(); err != nil {
		t.Fatalf("second Flush: %v", err)
	}
	readBack(t, d, "flushed write", off, 8*dev.SectorSize, 11)
}

// testWriteDurable calls WriteDurable with zero, one and two stages. The
// second stage of the two-stage call overwrites part of the first: the
// stages run one after the other, so the overlap is allowed and the second
// stage wins.
func testWriteDurable(t *testing.T, d dev.Device) {
	const s = dev.SectorSize
	if err := d.WriteDurable(); err != nil {
		t.Fatalf("WriteDurable(): %v", err)
	}

	one := []dev.IO{
		{Off: 0, Buf: pattern(2*s, 0, 12)},
		{Off: 16 * s, Buf: pattern(s, 16*s, 12)},
	}
	if err := d.WriteDurable(one); err != nil {
		t.Fatalf("WriteDurable(1 stage): %v", err)
	}
	readBack(t, d, "one stage", 0, 2*s, 12)
	readBack(t, d, "one stage", 16*s, s, 12)

	// A commit: nodes, flush, superblock over a range the first stage
	// wrote, flush.
	nodes := []dev.IO{
		{Off: 32 * s, Buf: pattern(4*s, 32*s, 13)},
		{Off: 40 * s, Buf: pattern(4*s, 40*s, 13)},
	}
	super := []dev.IO{{Off: 33 * s, Buf: pattern(s, 33*s, 14)}}
	if err := d.WriteDurable(nodes, super); err != nil {
		t.Fatalf("WriteDurable(2 stages): %v", err)
	}
	b := garbage(4 * s)
	mustRead(t, d, dev.IO{Off: 32 * s, Buf: b})
	check(t, "stage 1 before the overlap", b[:s], 32*s, 13)
	check(t, "stage 2 over stage 1", b[s:2*s], 33*s, 14)
	check(t, "stage 1 after the overlap", b[2*s:], 34*s, 13)
	readBack(t, d, "stage 1", 40*s, 4*s, 13)

	// An empty stage is a flush.
	if err := d.WriteDurable([]dev.IO{}); err != nil {
		t.Fatalf("WriteDurable(empty stage): %v", err)
	}
}
