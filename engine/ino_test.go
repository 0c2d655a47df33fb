package engine

import (
	"bytes"
	"fmt"
	"testing"
)

// An inode number prints in decimal, as Transid and Bytenr.
func TestIno_String(t *testing.T) {
	var s fmt.Stringer = RootDirIno
	if got := s.String(); got != "256" {
		t.Errorf("RootDirIno.String() = %q", got)
	}
	if got := fmt.Sprintf("%v %s %d", FirstFreeIno, FirstFreeIno, FirstFreeIno); got != "257 257 257" {
		t.Errorf("FirstFreeIno formats as %q", got)
	}
}

// InoKey puts the inode number in the objectid, unchanged, and Key.Ino reads
// it back: the on-disk key is the same u64 it was before Ino had a type.
func TestInoKey_RoundTrip(t *testing.T) {
	for _, ino := range []Ino{RootDirIno, FirstFreeIno, 1 << 40, ^Ino(0)} {
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

// A directory entry's child is the u64 it always was on disk: a golden
// encoding, and its decoding back.
func TestDirEntry_Encode_Golden(t *testing.T) {
	e := DirEntry{Child: 0x0807060504030201, Type: 8, Index: 3, Name: []byte("ab")}
	want := []byte{
		1, 2, 3, 4, 5, 6, 7, 8, // child, little-endian
		8,                      // type
		3, 0, 0, 0, 0, 0, 0, 0, // index
		2, 0, // name length
		'a', 'b',
	}
	b := EncodeDirEntries(nil, e)
	if !bytes.Equal(b, want) {
		t.Fatalf("encoding\n got %v\nwant %v", b, want)
	}
	es, err := DecodeDirEntries(b)
	if err != nil || len(es) != 1 || es[0].Child != e.Child || es[0].Index != 3 || string(es[0].Name) != "ab" {
		t.Fatalf("decoded %+v, %v", es, err)
	}
}
