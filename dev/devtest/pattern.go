package devtest

import (
	"bytes"
	"encoding/binary"
	"testing"

	"ustore/dev"
)

// fill writes into b the pattern of device range [off, off+len(b)) for tag.
// Every 8-byte word depends on its own device offset and on the tag, so a
// sector that lands at the wrong offset, or an older generation of the same
// sector, never compares equal (Invariant 2).
func fill(b []byte, off int64, tag uint64) {
	if len(b)%8 != 0 {
		panic("devtest: pattern length not a multiple of 8")
	}
	for i := 0; i < len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], word(uint64(off)+uint64(i), tag))
	}
}

// word mixes a device offset and a tag into one pattern word (the splitmix64
// finalizer): nearby offsets and tags give unrelated words.
func word(off, tag uint64) uint64 {
	x := off ^ (tag+1)*0x9e3779b97f4a7c15
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// pattern returns a fresh aligned buffer of n bytes filled for (off, tag).
func pattern(n int, off int64, tag uint64) []byte {
	b := dev.AlignedBuffer(n)
	fill(b, off, tag)
	return b
}

// garbage returns an aligned buffer of n bytes that matches no pattern and is
// not zero, so that a read which leaves the buffer untouched is caught.
func garbage(n int) []byte {
	b := dev.AlignedBuffer(n)
	for i := range b {
		b[i] = 0xa5
	}
	return b
}

// check reports whether got holds the pattern of [off, off+len(got)) for
// tag, naming the first differing byte. It is safe to call from goroutines.
func check(t testing.TB, what string, got []byte, off int64, tag uint64) bool {
	t.Helper()
	want := make([]byte, len(got))
	fill(want, off, tag)
	return same(t, what, got, want, off)
}

// checkZero reports whether got is all zeros, naming the first byte that is
// not.
func checkZero(t testing.TB, what string, got []byte, off int64) bool {
	t.Helper()
	return same(t, what, got, make([]byte, len(got)), off)
}

// checkFill reports whether every byte of got is c: the content of a buffer
// that the device must not have touched.
func checkFill(t testing.TB, what string, got []byte, c byte) bool {
	t.Helper()
	return same(t, what, got, bytes.Repeat([]byte{c}, len(got)), 0)
}

// same compares got with want in one bytes.Equal (cheap under -race, unlike
// a loop over bytes) and names the first differing byte, got[i] being the
// device's byte off+i.
func same(t testing.TB, what string, got, want []byte, off int64) bool {
	t.Helper()
	if bytes.Equal(got, want) {
		return true
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s: device byte %d (buffer byte %d): got %#02x, want %#02x",
				what, off+int64(i), i, got[i], want[i])
			break
		}
	}
	return false
}
