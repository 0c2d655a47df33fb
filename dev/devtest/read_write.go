package devtest

import (
	"errors"
	"testing"

	"ustore/dev"
)

func testSize(t *testing.T, d dev.Device) {
	if got := d.Size(); got != deviceSize {
		t.Errorf("Size() = %d, want %d", got, deviceSize)
	}
	if d.Size()%dev.SectorSize != 0 {
		t.Errorf("Size() = %d, not a multiple of SectorSize", d.Size())
	}
	if d.Backend() == "" {
		t.Error("Backend() is empty")
	}
	p := d.Buffers()
	if p == nil {
		t.Fatal("Buffers() is nil")
	}
	n := p.BufferSize()
	if n <= 0 || n%dev.SectorSize != 0 {
		t.Fatalf("Buffers().BufferSize() = %d, not a positive multiple of SectorSize", n)
	}
	b := p.Get()
	if len(b) != n || !dev.IsAligned(b) {
		t.Errorf("Buffers().Get(): length %d aligned %v, want length %d aligned", len(b), dev.IsAligned(b), n)
	}
	p.Put(b)
}

// testReadNeverWritten reads sectors nobody wrote, at both ends and in the
// middle: they must read as zeros, and the device must overwrite the
// buffer's garbage to say so.
func testReadNeverWritten(t *testing.T, d dev.Device) {
	size := d.Size()
	ios := []dev.IO{
		{Off: 0, Buf: garbage(dev.SectorSize)},
		{Off: size / 2, Buf: garbage(1 << 20)},
		{Off: size - dev.SectorSize, Buf: garbage(dev.SectorSize)},
	}
	mustRead(t, d, ios...)
	for _, io := range ios {
		checkZero(t, "never-written sector", io.Buf, io.Off)
	}
}

// testEmptyBatch: a batch of no IOs is a no-op that succeeds.
func testEmptyBatch(t *testing.T, d dev.Device) {
	if err := d.Read(nil); err != nil {
		t.Errorf("Read(nil) = %v, want nil", err)
	}
	if err := d.Write(nil); err != nil {
		t.Errorf("Write(nil) = %v, want nil", err)
	}
	if err := d.Read([]dev.IO{}); err != nil {
		t.Errorf("Read(empty) = %v, want nil", err)
	}
}

func testWriteSingle(t *testing.T, d dev.Device) {
	off := int64(3 * dev.SectorSize)
	mustWrite(t, d, dev.IO{Off: off, Buf: pattern(dev.SectorSize, off, 1)})
	readBack(t, d, "single write", off, dev.SectorSize, 1)
	// Its neighbours stay zero: the write touched its own sector only.
	before, after := garbage(dev.SectorSize), garbage(dev.SectorSize)
	mustRead(t, d, dev.IO{Off: off - dev.SectorSize, Buf: before}, dev.IO{Off: off + dev.SectorSize, Buf: after})
	checkZero(t, "sector before the write", before, off-dev.SectorSize)
	checkZero(t, "sector after the write", after, off+dev.SectorSize)
}

// testWriteBatch writes IOs of several lengths at scattered offsets in one
// batch, then reads them back both as one batch in another order and one by
// one.
func testWriteBatch(t *testing.T, d dev.Device) {
	offs := []int64{0, 5, 9, 17, 64, 200, 1000, 4094} // in sectors; the last ends at the device end
	var ios []dev.IO
	for i, s := range offs {
		n := (i%3 + 1) * dev.SectorSize
		off := s * dev.SectorSize
		ios = append(ios, dev.IO{Off: off, Buf: pattern(n, off, 2)})
	}
	mustWrite(t, d, ios...)

	reads := make([]dev.IO, len(ios))
	for i := range ios {
		w := ios[len(ios)-1-i]
		reads[i] = dev.IO{Off: w.Off, Buf: garbage(len(w.Buf))}
	}
	mustRead(t, d, reads...)
	for _, r := range reads {
		check(t, "batch read", r.Buf, r.Off, 2)
	}
	for _, w := range ios {
		readBack(t, d, "single read after batch write", w.Off, len(w.Buf), 2)
	}
}

// testWriteAdjacent writes a commit's shape: 150 adjacent 16 KiB writes (more
// than one request of any backend's merge limit) in offset order, then
// fourteen listed out of order, adjacent runs with gaps among them, in one batch each;
// every byte reads back. Backends merge adjacent writes into one request; the
// merge must neither drop nor misplace a buffer.
func testWriteAdjacent(t *testing.T, d dev.Device) {
	const n = 16 << 10
	base := int64(8 << 20)
	var ios []dev.IO
	for i := range 150 {
		off := base + int64(i)*n
		ios = append(ios, dev.IO{Off: off, Buf: pattern(n, off, 7)})
	}
	mustWrite(t, d, ios...)
	noErrs(t, "adjacent run", ios)
	readBack(t, d, "adjacent run", base, 150*n, 7)

	base = 12 << 20
	ios = ios[:0]
	for _, i := range []int{3, 1, 2, 0, 9, 7, 8, 4, 5, 6, 12, 30, 31, 29} {
		off := base + int64(i)*n
		ios = append(ios, dev.IO{Off: off, Buf: pattern(n, off, 8)})
	}
	mustWrite(t, d, ios...)
	noErrs(t, "out-of-order run", ios)
	readBack(t, d, "out-of-order run", base, 10*n, 8)
	for _, w := range ios {
		readBack(t, d, "out-of-order write", w.Off, n, 8)
	}
}

// noErrs fails the test if a batch that succeeded left an Err on an IO (a
// merged request's result must reach each IO it carried, nil included).
func noErrs(t *testing.T, what string, ios []dev.IO) {
	t.Helper()
	for i := range ios {
		if ios[i].Err != nil {
			t.Fatalf("%s: IO %d at %d has Err %v after a successful Write", what, i, ios[i].Off, ios[i].Err)
		}
	}
}

// testWriteLarge moves 1 MiB buffers, in one batch of two, and reads them
// back as one 2 MiB transfer and as 64 KiB pieces.
func testWriteLarge(t *testing.T, d dev.Device) {
	const mib = 1 << 20
	base := int64(4 * mib)
	mustWrite(t, d,
		dev.IO{Off: base, Buf: pattern(mib, base, 3)},
		dev.IO{Off: base + mib, Buf: pattern(mib, base+mib, 3)},
	)
	readBack(t, d, "2 MiB read", base, 2*mib, 3)
	var pieces []dev.IO
	for off := base; off < base+2*mib; off += 64 << 10 {
		pieces = append(pieces, dev.IO{Off: off, Buf: garbage(64 << 10)})
	}
	mustRead(t, d, pieces...)
	for _, p := range pieces {
		check(t, "64 KiB piece", p.Buf, p.Off, 3)
	}
}

// testWritePoolBuffers uses the device's own pool (the registered-buffer
// path of uringdev) for the writes and the reads.
func testWritePoolBuffers(t *testing.T, d dev.Device) {
	p := d.Buffers()
	n := p.BufferSize()
	count := min(4, int((d.Size()-8*dev.SectorSize)/int64(2*n)))
	if count < 1 {
		t.Fatalf("Buffers().BufferSize() = %d does not fit a device of %d bytes", n, d.Size())
	}
	var ios []dev.IO
	for i := range count {
		off := int64(i*2*n) + 8*dev.SectorSize
		b := p.Get()
		fill(b, off, 4)
		ios = append(ios, dev.IO{Off: off, Buf: b})
	}
	mustWrite(t, d, ios...)
	for i := range ios {
		clear(ios[i].Buf)
	}
	mustRead(t, d, ios...)
	for _, io := range ios {
		check(t, "pool buffer", io.Buf, io.Off, 4)
		p.Put(io.Buf)
	}
}

// testWriteOverwrite: a later write wins, sector by sector, including one
// that covers only the middle of an earlier one.
func testWriteOverwrite(t *testing.T, d dev.Device) {
	const s = dev.SectorSize
	base := int64(100 * s)
	mustWrite(t, d, dev.IO{Off: base, Buf: pattern(4*s, base, 5)})
	mustWrite(t, d, dev.IO{Off: base + s, Buf: pattern(2*s, base+s, 6)})
	b := garbage(4 * s)
	mustRead(t, d, dev.IO{Off: base, Buf: b})
	check(t, "first sector (old)", b[:s], base, 5)
	check(t, "middle sectors (new)", b[s:3*s], base+s, 6)
	check(t, "last sector (old)", b[3*s:], base+3*s, 5)
}

// testErrCleared: IO.Err is an output; a success clears whatever a previous
// use of the IO left there.
func testErrCleared(t *testing.T, d dev.Device) {
	stale := errors.New("devtest: stale error")
	off := int64(10 * dev.SectorSize)
	ios := []dev.IO{
		{Off: off, Buf: pattern(dev.SectorSize, off, 7), Err: stale},
		{Off: off + dev.SectorSize, Buf: pattern(dev.SectorSize, off+dev.SectorSize, 7), Err: stale},
	}
	mustWrite(t, d, ios...)
	for i, io := range ios {
		if io.Err != nil {
			t.Errorf("write io %d: Err = %v after success, want nil", i, io.Err)
		}
		ios[i].Err = stale
	}
	mustRead(t, d, ios...)
	for i, io := range ios {
		if io.Err != nil {
			t.Errorf("read io %d: Err = %v after success, want nil", i, io.Err)
		}
	}
}
