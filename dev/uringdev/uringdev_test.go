package uringdev

import (
	"bytes"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"ustore/dev"
	"ustore/dev/devtest"
	"ustore/ring"
)

func opener(opts Options) func(t *testing.T, size int64) dev.Device {
	return func(t *testing.T, size int64) dev.Device {
		opts.Size = size
		opts.Logger = slog.New(slog.DiscardHandler)
		path := filepath.Join(t.TempDir(), strings.ReplaceAll(t.Name(), "/", "_"))
		d, err := Open(path, opts)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return d
	}
}

func TestDevice_Conformance(t *testing.T) {
	t.Run("odirect", func(t *testing.T) { devtest.Run(t, opener(Options{})) })
	t.Run("buffered", func(t *testing.T) { devtest.Run(t, opener(Options{Buffered: true})) })
	t.Run("no-registered-buffers", func(t *testing.T) { devtest.Run(t, opener(Options{PoolBytes: -1})) })
	t.Run("tiny-ring", func(t *testing.T) {
		// Batches larger than the ring admits go in pieces.
		devtest.Run(t, opener(Options{Ring: ring.Config{Entries: 4}}))
	})
}

func openTest(t *testing.T, opts Options) *Device {
	t.Helper()
	d := opener(opts)(t, 64<<20).(*Device)
	t.Cleanup(func() { d.Close() })
	return d
}

func TestDevice_Backend_Describes(t *testing.T) {
	d := openTest(t, Options{})
	if b := d.Backend(); !strings.Contains(b, "io_uring") || !strings.Contains(b, "O_DIRECT") || !strings.Contains(b, "registered") {
		t.Fatalf("Backend() = %q", b)
	}
}

func TestDevice_Write_PoolBuffersAreFixed(t *testing.T) {
	d := openTest(t, Options{})
	ios := make([]dev.IO, 8)
	for i := range ios {
		b := d.Buffers().Get()
		for j := range b {
			b[j] = byte(i + j)
		}
		// A gap after each: adjacent writes would go as one writev, which
		// takes no registered buffer.
		ios[i] = dev.IO{Off: int64(2*i) * int64(len(b)), Buf: b}
	}
	if err := d.Write(ios); err != nil {
		t.Fatal(err)
	}
	if st := d.Ring().Stats(); st.FixedOps != 8 {
		t.Fatalf("fixed ops %d, want 8 (pool buffers lie in the registered region)", st.FixedOps)
	}
	for _, io := range ios {
		d.Buffers().Put(io.Buf)
	}
}

func TestDevice_WriteDurable_Stages(t *testing.T) {
	d := openTest(t, Options{})
	nodes := make([]dev.IO, 4)
	for i := range nodes {
		nodes[i] = dev.IO{Off: int64(i+2) * dev.SectorSize, Buf: dev.AlignedBuffer(dev.SectorSize)}
	}
	super := []dev.IO{{Off: 0, Buf: dev.AlignedBuffer(dev.SectorSize)}}
	copy(super[0].Buf, bytes.Repeat([]byte{0xEE}, dev.SectorSize))
	before := d.Ring().Stats()
	if err := d.WriteDurable(nodes, super); err != nil {
		t.Fatal(err)
	}
	st := d.Ring().Stats()
	// Stage 1: 4 adjacent writes, one writev linked to its flush; stage 2:
	// a write linked to its flush. Two submissions of two ops each.
	if ring, direct := st.Completed-before.Completed, st.Direct-before.Direct; ring != 4 || direct != 0 {
		t.Fatalf("%d ring ops and %d direct, want 4 and 0", ring, direct)
	}
	// Nodes apart from each other: 4 writes in one batch, then a flush
	// (the idle ring's direct path).
	for i := range nodes {
		nodes[i].Off = int64(2*i+2) * dev.SectorSize
	}
	before = d.Ring().Stats()
	if err := d.WriteDurable(nodes); err != nil {
		t.Fatal(err)
	}
	st = d.Ring().Stats()
	if ring, direct := st.Completed-before.Completed, st.Direct-before.Direct; ring != 4 || direct != 1 {
		t.Fatalf("apart: %d ring ops and %d direct, want 4 and 1", ring, direct)
	}
	got := dev.AlignedBuffer(dev.SectorSize)
	if err := d.Read([]dev.IO{{Off: 0, Buf: got}}); err != nil || got[100] != 0xEE {
		t.Fatalf("superblock read back: %v, byte %#x", err, got[100])
	}
}

// TestDevice_Write_AdjacentAsOneRequest: writes adjacent on the device, in
// whatever order the batch lists them, go as one writev — one request for
// the device — and land where each IO said; a gap starts a new op.
func TestDevice_Write_AdjacentAsOneRequest(t *testing.T) {
	d := openTest(t, Options{})
	const s = dev.SectorSize
	offs := []int64{11 * s, 10 * s, 12 * s, 20 * s, 5 * s, 21 * s, 6 * s, 30 * s}
	ios := make([]dev.IO, len(offs))
	for i, off := range offs {
		ios[i] = dev.IO{Off: off, Buf: dev.AlignedBuffer(s)}
		for j := range ios[i].Buf {
			ios[i].Buf[j] = byte(i + 1)
		}
	}
	before := d.Ring().Stats()
	if err := d.Write(ios); err != nil {
		t.Fatal(err)
	}
	// 5–6, 10–12, 20–21, 30: four ops.
	if n := d.Ring().Stats().Completed - before.Completed; n != 4 {
		t.Fatalf("%d ring ops for 4 runs of adjacent writes", n)
	}
	for i, off := range offs {
		got := dev.AlignedBuffer(s)
		if err := d.Read([]dev.IO{{Off: off, Buf: got}}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, bytes.Repeat([]byte{byte(i + 1)}, s)) {
			t.Fatalf("block at %d: byte %d, want %d", off, got[0], i+1)
		}
	}
	// More than mergeIOsMax adjacent writes: more than one op, all written.
	many := make([]dev.IO, mergeIOsMax+3)
	for i := range many {
		many[i] = dev.IO{Off: int64(100+i) * s, Buf: bytes.Repeat([]byte{0xA5}, s)}
		many[i].Buf = append(dev.AlignedBuffer(s)[:0], many[i].Buf...)
	}
	before = d.Ring().Stats()
	if err := d.Write(many); err != nil {
		t.Fatal(err)
	}
	if n := d.Ring().Stats().Completed - before.Completed; n != 2 {
		t.Fatalf("%d ring ops for %d adjacent writes, want 2", n, len(many))
	}
	got := dev.AlignedBuffer(s)
	if err := d.Read([]dev.IO{{Off: int64(100+mergeIOsMax+2) * s, Buf: got}}); err != nil || got[0] != 0xA5 {
		t.Fatalf("the last of the adjacent writes: %v, byte %#x", err, got[0])
	}
}

// A batch of more IOs than the ring admits at once is split by ops, after
// merging: adjacent writes that would straddle an IO-counted piece boundary
// still go as one writev.
func TestDevice_Write_PiecesCountOps(t *testing.T) {
	d := openTest(t, Options{Ring: ring.Config{Entries: 4}})
	if d.Ring().InflightMax() >= mergeIOsMax {
		t.Fatalf("ring admits %d ops: not a tiny ring", d.Ring().InflightMax())
	}
	const s = 4096
	ios := make([]dev.IO, mergeIOsMax)
	for i := range ios {
		ios[i] = dev.IO{Off: int64(10+i) * s, Buf: dev.AlignedBuffer(s)}
		for j := range ios[i].Buf {
			ios[i].Buf[j] = byte(i)
		}
	}
	before := d.Ring().Stats()
	if err := d.Write(ios); err != nil {
		t.Fatal(err)
	}
	if n := d.Ring().Stats().Completed - before.Completed; n != 1 {
		t.Fatalf("%d ring ops for %d adjacent writes on a ring of %d, want 1",
			n, len(ios), d.Ring().InflightMax())
	}
	for i := range ios {
		if ios[i].Err != nil {
			t.Fatalf("IO %d: %v after a successful write", i, ios[i].Err)
		}
	}
	// Many more runs than the ring admits: pieces of ops, every IO written.
	apart := make([]dev.IO, 4*d.Ring().InflightMax()+1)
	for i := range apart {
		apart[i] = dev.IO{Off: int64(200+2*i) * s, Buf: dev.AlignedBuffer(s)}
		apart[i].Buf[0] = byte(i + 1)
	}
	if err := d.WriteDurable(apart); err != nil {
		t.Fatal(err)
	}
	for i := range apart {
		got := dev.AlignedBuffer(s)
		if err := d.Read([]dev.IO{{Off: apart[i].Off, Buf: got}}); err != nil || got[0] != byte(i+1) {
			t.Fatalf("IO %d: %v, byte %#x", i, err, got[0])
		}
	}
}

func TestDevice_Open_NotADirectory(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "missing", "f"), Options{Size: 1 << 20})
	if err == nil || errors.Is(err, ring.ErrUnavailable) {
		t.Fatalf("open under a missing directory: %v", err)
	}
}
