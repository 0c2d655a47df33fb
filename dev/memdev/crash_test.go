package memdev

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"ustore/dev"
)

// TestDevice_Crash_KeepNoneAndAll: KeepNone leaves exactly the flushed data,
// KeepAll everything; the original device is untouched by either.
func TestDevice_Crash_KeepNoneAndAll(t *testing.T) {
	d := New(8 * s)
	write(t, d, 0, 2*s, 1)
	flush(t, d)
	write(t, d, s, 2*s, 2)
	write(t, d, 4*s, s, 3)

	if got, want := sectorBytes(t, d.Crash(KeepNone()), 5), []byte{1, 1, 0, 0, 0}; !bytes.Equal(got, want) {
		t.Errorf("KeepNone: %v, want %v", got, want)
	}
	if got, want := sectorBytes(t, d.Crash(CrashPolicy{}), 5), []byte{1, 1, 0, 0, 0}; !bytes.Equal(got, want) {
		t.Errorf("zero CrashPolicy: %v, want %v", got, want)
	}
	if got, want := sectorBytes(t, d.Crash(KeepAll()), 5), []byte{1, 2, 2, 0, 3}; !bytes.Equal(got, want) {
		t.Errorf("KeepAll: %v, want %v", got, want)
	}
	if got, want := sectorBytes(t, d, 5), []byte{1, 2, 2, 0, 3}; !bytes.Equal(got, want) {
		t.Errorf("original after crashes: %v, want %v", got, want)
	}
	if n := len(d.Unflushed()); n != 2 {
		t.Errorf("original has %d unflushed writes after crashes, want 2", n)
	}
}

// TestDevice_Crash_KeepSubsetExact enumerates every subset of five unflushed
// writes to distinct sectors: the crash keeps exactly that subset, on top of
// the flushed data.
func TestDevice_Crash_KeepSubsetExact(t *testing.T) {
	d := New(8 * s)
	write(t, d, 7*s, s, 0x77)
	flush(t, d)
	for i := range 5 {
		write(t, d, int64(i)*s, s, byte(0x10+i))
	}
	for mask := range uint64(1 << 5) {
		c := d.Crash(KeepSubset(mask))
		for i := range 5 {
			want := byte(0)
			if mask&(1<<i) != 0 {
				want = byte(0x10 + i)
			}
			if got := sectorByte(t, c, int64(i)); got != want {
				t.Errorf("mask %05b: sector %d = %#x, want %#x", mask, i, got, want)
			}
		}
		if got := sectorByte(t, c, 7); got != 0x77 {
			t.Errorf("mask %05b: flushed sector 7 = %#x, want 0x77", mask, got)
		}
	}
}

// TestDevice_Crash_OverlapNewestKeptWins: three unflushed writes to one
// sector over flushed data; each subset leaves the newest kept one, or the
// flushed data when none is kept.
func TestDevice_Crash_OverlapNewestKeptWins(t *testing.T) {
	d := New(4 * s)
	write(t, d, 0, 2*s, 0xf0)
	flush(t, d)
	write(t, d, 0, s, 0xa1)   // unflushed 0
	write(t, d, 0, 2*s, 0xa2) // unflushed 1: also covers sector 1
	write(t, d, 0, s, 0xa3)   // unflushed 2
	for mask := range uint64(1 << 3) {
		c := d.Crash(KeepSubset(mask))
		want0, want1 := byte(0xf0), byte(0xf0)
		for i, v := range []byte{0xa1, 0xa2, 0xa3} {
			if mask&(1<<i) != 0 {
				want0 = v
				if i == 1 {
					want1 = v
				}
			}
		}
		if got := sectorBytes(t, c, 2); !bytes.Equal(got, []byte{want0, want1}) {
			t.Errorf("mask %03b: sectors = %#v, want %#v", mask, got, []byte{want0, want1})
		}
	}
}

// tornCase lays out, over a 4-sector device, old data 0x0d in sectors 0-3
// (flushed) and an unflushed 2-sector write of 0x4e at sector 1, and returns
// the device.
func tornCase(t *testing.T) *Device {
	d := New(4 * s)
	write(t, d, 0, 4*s, 0x0d)
	flush(t, d)
	write(t, d, s, 2*s, 0x4e)
	return d
}

// checkTorn checks a crash of tornCase under pieces: outside the write's
// range the old data, inside it each 512-byte piece all new when it persists
// and all old when not (Invariant 5).
func checkTorn(t *testing.T, c *Device, pieces []bool, what string) {
	t.Helper()
	b := read(t, c, 0, 4*s)
	for i, got := range b {
		want := byte(0x0d)
		if i >= s && i < 3*s {
			if p := (i - s) / dev.TornSize; p < len(pieces) && pieces[p] {
				want = 0x4e
			}
		}
		if got != want {
			t.Fatalf("%s: byte %d (piece %d of the write) = %#x, want %#x", what, i, (i-s)/dev.TornSize, got, want)
		}
	}
}

// TestDevice_Crash_Tear: every piece of a torn write is all old or all new as
// Pieces says, and nothing outside the write changes — for every mask of the
// first sector's 8 pieces, and for random masks over both sectors.
func TestDevice_Crash_Tear(t *testing.T) {
	d := tornCase(t)
	w := d.Unflushed()[0]
	if w.Pieces() != 16 {
		t.Fatalf("Pieces() = %d, want 16", w.Pieces())
	}
	for mask := range uint64(1 << 8) {
		pieces := MaskPieces(mask, w.Pieces())
		c := d.Crash(CrashPolicy{Tear: &Tear{Index: 0, Pieces: pieces}})
		checkTorn(t, c, pieces, fmt.Sprintf("mask %08b", mask))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 50 {
		pieces := RandomPieces(rng, w.Pieces())
		c := d.Crash(CrashPolicy{Tear: &Tear{Index: 0, Pieces: pieces}})
		checkTorn(t, c, pieces, fmt.Sprintf("random %d", i))
	}
	// Short Pieces: the pieces past its end are lost.
	c := d.Crash(CrashPolicy{Tear: &Tear{Index: 0, Pieces: []bool{true}}})
	checkTorn(t, c, []bool{true}, "one piece")
}

// TestDevice_Crash_TearInOrder: a torn write takes its place in the order of
// the kept writes: under it, an older kept write shows through its lost
// pieces; over it, a newer kept write covers its kept pieces.
func TestDevice_Crash_TearInOrder(t *testing.T) {
	d := New(4 * s)
	write(t, d, 0, s, 0x01) // unflushed 0
	write(t, d, 0, s, 0x02) // unflushed 1: torn
	write(t, d, 0, s, 0x03) // unflushed 2
	pieces := MaskPieces(0b0101, 8)

	under := d.Crash(CrashPolicy{Keep: func(i int, _ Write) bool { return i == 0 }, Tear: &Tear{Index: 1, Pieces: pieces}})
	b := read(t, under, 0, s)
	for p := range 8 {
		want := byte(0x01)
		if pieces[p] {
			want = 0x02
		}
		if got := b[p*dev.TornSize]; got != want {
			t.Errorf("older kept under the tear: piece %d = %#x, want %#x", p, got, want)
		}
	}
	// Keep says false for the torn index, yet the tear applies: Tear
	// overrides Keep for its write.
	over := d.Crash(CrashPolicy{Keep: func(i int, _ Write) bool { return i != 1 }, Tear: &Tear{Index: 1, Pieces: pieces}})
	if got := sectorByte(t, over, 0); got != 0x03 {
		t.Errorf("newer kept over the tear: %#x, want 0x03", got)
	}
}

// TestDevice_Crash_FlushedSurvivesEveryPolicy: under random Keep and Tear
// choices, a flushed sector that no unflushed write touches always keeps its
// flushed data, and a touched one holds its flushed data or the data of one
// of the writes touching it.
func TestDevice_Crash_FlushedSurvivesEveryPolicy(t *testing.T) {
	const sectors = 32
	seed := uint64(7)
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d", seed)
	d := New(sectors * s)
	for i := range sectors {
		write(t, d, int64(i)*s, s, byte(i+1))
	}
	flush(t, d)
	touched := make(map[int][]byte) // sector → bytes of writes touching it
	for k := range 6 {
		first, n := rng.IntN(sectors-2), 1+rng.IntN(2)
		c := byte(0x80 + k)
		write(t, d, int64(first)*s, n*s, c)
		for i := first; i < first+n; i++ {
			touched[i] = append(touched[i], c)
		}
	}
	unflushed := d.Unflushed()
	for round := range 200 {
		p := KeepRandom(rng)
		if round%2 == 0 {
			i := rng.IntN(len(unflushed))
			p.Tear = &Tear{Index: i, Pieces: RandomPieces(rng, unflushed[i].Pieces())}
		}
		c := d.Crash(p)
		b := read(t, c, 0, sectors*s)
		for i := range b {
			sector := i / s
			got := b[i]
			if got == byte(sector+1) || bytes.IndexByte(touched[sector], got) >= 0 {
				continue
			}
			t.Fatalf("round %d: sector %d byte %d = %#x: neither flushed %#x nor one of %#v",
				round, sector, i, got, byte(sector+1), touched[sector])
		}
	}
}

// TestDevice_Crash_Independent: writes to a crashed device do not reach the
// original, nor the other way round.
func TestDevice_Crash_Independent(t *testing.T) {
	d := New(4 * s)
	write(t, d, 0, s, 1)
	flush(t, d)
	write(t, d, s, s, 2)
	c := d.Crash(KeepAll())
	write(t, c, 0, 2*s, 9)
	flush(t, c)
	write(t, d, 2*s, s, 3)
	if len(c.Ops()) != 2 || c.Seq() != 2 {
		t.Errorf("crashed device history: Seq %d, Ops %v; want its own 2 ops", c.Seq(), c.Ops())
	}
	if got, want := sectorBytes(t, d, 3), []byte{1, 2, 3}; !bytes.Equal(got, want) {
		t.Errorf("original = %v, want %v", got, want)
	}
	if got, want := sectorBytes(t, c, 3), []byte{9, 9, 0}; !bytes.Equal(got, want) {
		t.Errorf("crashed = %v, want %v", got, want)
	}
	if got, want := sectorBytes(t, d.Crash(KeepNone()), 3), []byte{1, 0, 0}; !bytes.Equal(got, want) {
		t.Errorf("original crashed again = %v, want %v", got, want)
	}
}

// TestDevice_Crash_RandomIsSeeded: one seed, one crash.
func TestDevice_Crash_RandomIsSeeded(t *testing.T) {
	d := New(64 * s)
	for i := range 64 {
		write(t, d, int64(i)*s, s, byte(i+1))
	}
	a := d.Crash(KeepRandom(rand.New(rand.NewPCG(3, 4))))
	b := d.Crash(KeepRandom(rand.New(rand.NewPCG(3, 4))))
	if !bytes.Equal(sectorBytes(t, a, 64), sectorBytes(t, b, 64)) {
		t.Error("KeepRandom with the same seed gave different crashes")
	}
}

func TestDevice_Crash_BadTearPanics(t *testing.T) {
	d := New(4 * s)
	write(t, d, 0, s, 1)
	defer func() {
		if recover() == nil {
			t.Error("Tear.Index past the unflushed writes did not panic")
		}
	}()
	d.Crash(CrashPolicy{Tear: &Tear{Index: 1}})
}
