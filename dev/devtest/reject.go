package devtest

import (
	"errors"
	"math"
	"testing"

	"ustore/dev"
)

// badIO is one request the contract rejects before any I/O, and the sentinel
// it must match.
type badIO struct {
	name string
	io   dev.IO
	want error
}

func misalignedIOs() []badIO {
	const s = dev.SectorSize
	// A buffer of the right length whose address is 512 bytes past a
	// 4096-aligned one.
	shifted := dev.AlignedBuffer(2 * s)[512 : 512+s]
	return []badIO{
		{"offset 512", dev.IO{Off: 512, Buf: dev.AlignedBuffer(s)}, dev.ErrAlignment},
		{"offset 1", dev.IO{Off: s + 1, Buf: dev.AlignedBuffer(s)}, dev.ErrAlignment},
		{"length 512", dev.IO{Off: s, Buf: dev.AlignedBuffer(512)}, dev.ErrAlignment},
		{"length 4097", dev.IO{Off: s, Buf: dev.AlignedBuffer(s + 1)}, dev.ErrAlignment},
		{"length 0", dev.IO{Off: s, Buf: dev.AlignedBuffer(0)}, dev.ErrAlignment},
		{"nil buffer", dev.IO{Off: s}, dev.ErrAlignment},
		{"buffer address", dev.IO{Off: s, Buf: shifted}, dev.ErrAlignment},
	}
}

func outOfRangeIOs(size int64) []badIO {
	const s = dev.SectorSize
	return []badIO{
		{"one past the end", dev.IO{Off: size, Buf: dev.AlignedBuffer(s)}, dev.ErrOutOfRange},
		{"straddles the end", dev.IO{Off: size - s, Buf: dev.AlignedBuffer(2 * s)}, dev.ErrOutOfRange},
		{"far past the end", dev.IO{Off: size * 4, Buf: dev.AlignedBuffer(s)}, dev.ErrOutOfRange},
		{"negative offset", dev.IO{Off: -s, Buf: dev.AlignedBuffer(s)}, dev.ErrOutOfRange},
		// Off+len overflows int64 and wraps negative: a check written as
		// Off+len > size lets it through.
		{"offset+length overflows", dev.IO{Off: math.MaxInt64 &^ (s - 1), Buf: dev.AlignedBuffer(s)}, dev.ErrOutOfRange},
	}
}

// expectRejected runs op on a one-IO batch and checks the sentinel.
func expectRejected(t *testing.T, what string, op func([]dev.IO) error, bad badIO) {
	t.Helper()
	err := op([]dev.IO{bad.io})
	if !errors.Is(err, bad.want) {
		t.Errorf("%s %s: got %v, want errors.Is(err, %v)", what, bad.name, err, bad.want)
	}
}

func testReadMisaligned(t *testing.T, d dev.Device) {
	for _, bad := range misalignedIOs() {
		expectRejected(t, "Read", d.Read, bad)
	}
}

func testWriteMisaligned(t *testing.T, d dev.Device) {
	for _, bad := range misalignedIOs() {
		expectRejected(t, "Write", d.Write, bad)
	}
}

func testReadOutOfRange(t *testing.T, d dev.Device) {
	size := d.Size()
	// The last sector is inside the device.
	last := garbage(dev.SectorSize)
	mustRead(t, d, dev.IO{Off: size - dev.SectorSize, Buf: last})
	checkZero(t, "last sector", last, size-dev.SectorSize)
	for _, bad := range outOfRangeIOs(size) {
		expectRejected(t, "Read", d.Read, bad)
	}
}

func testWriteOutOfRange(t *testing.T, d dev.Device) {
	size := d.Size()
	off := size - dev.SectorSize
	mustWrite(t, d, dev.IO{Off: off, Buf: pattern(dev.SectorSize, off, 8)})
	readBack(t, d, "last sector", off, dev.SectorSize, 8)
	for _, bad := range outOfRangeIOs(size) {
		expectRejected(t, "Write", d.Write, bad)
	}
	// The rejected writes near the end changed nothing there.
	readBack(t, d, "last sector after rejected writes", off, dev.SectorSize, 8)
}

// testWriteRejectedBatch: a batch with one bad IO is rejected whole, before
// any I/O — the good IOs around the bad one write nothing.
func testWriteRejectedBatch(t *testing.T, d dev.Device) {
	const s = dev.SectorSize
	mustWrite(t, d, dev.IO{Off: 0, Buf: pattern(2*s, 0, 9)})
	bads := append(misalignedIOs(), outOfRangeIOs(d.Size())...)
	for i, bad := range bads {
		tag := uint64(100 + i)
		batch := []dev.IO{
			{Off: 0, Buf: pattern(s, 0, tag)},
			bad.io,
			{Off: s, Buf: pattern(s, s, tag)},
		}
		err := d.Write(batch)
		if !errors.Is(err, bad.want) {
			t.Errorf("Write batch with %s: got %v, want errors.Is(err, %v)", bad.name, err, bad.want)
		}
	}
	readBack(t, d, "sectors of rejected batches", 0, 2*s, 9)
}

// testReadRejectedBatch: a rejected read batch leaves the good IOs' buffers
// untouched — nothing was issued.
func testReadRejectedBatch(t *testing.T, d dev.Device) {
	const s = dev.SectorSize
	mustWrite(t, d, dev.IO{Off: 0, Buf: pattern(s, 0, 10)})
	bads := append(misalignedIOs(), outOfRangeIOs(d.Size())...)
	for _, bad := range bads {
		good := garbage(s)
		batch := []dev.IO{{Off: 0, Buf: good}, bad.io}
		err := d.Read(batch)
		if !errors.Is(err, bad.want) {
			t.Errorf("Read batch with %s: got %v, want errors.Is(err, %v)", bad.name, err, bad.want)
		}
		checkFill(t, "good buffer of a rejected read batch ("+bad.name+")", good, 0xa5)
	}
}
