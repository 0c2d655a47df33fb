package engine

import (
	"fmt"
	"testing"
)

// An inode number prints in decimal, as Transid and Bytenr.
func TestIno_String(t *testing.T) {
	var s fmt.Stringer = Ino(256)
	if got := s.String(); got != "256" {
		t.Errorf("Ino(256).String() = %q", got)
	}
	if got := fmt.Sprintf("%v %s %d", Ino(257), Ino(257), Ino(257)); got != "257 257 257" {
		t.Errorf("Ino(257) formats as %q", got)
	}
}

// InoKey puts the inode number in the objectid, unchanged, and Key.Ino reads
// it back: the on-disk key is the same u64 it was before Ino had a type.
func TestInoKey_RoundTrip(t *testing.T) {
	for _, ino := range []Ino{256, 257, 1 << 40, ^Ino(0)} {
		k := InoKey(ino, TypeExtentData, 4096)
		if want := (Key{ObjectID: uint64(ino), Type: TypeExtentData, Offset: 4096}); k != want {
			t.Fatalf("InoKey(%v) = %v, want %v", ino, k, want)
		}
		if k.Ino() != ino {
			t.Fatalf("InoKey(%v).Ino() = %v", ino, k.Ino())
		}
		b := make([]byte, keySize)
		putKey(b, k)
		if got := getKey(b); got.Ino() != ino || got != k {
			t.Fatalf("key %v decodes as %v", k, got)
		}
	}
}
