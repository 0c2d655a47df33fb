package engine

import (
	"bytes"
	"errors"
	"testing"
)

func TestXattrEntries_RoundTrip(t *testing.T) {
	es := []XattrEntry{
		{Name: []byte("user.a"), Value: nil},
		{Name: []byte("user.bb"), Value: []byte("value")},
		{Name: bytes.Repeat([]byte("n"), XattrNameMax), Value: bytes.Repeat([]byte{0}, 1000)},
	}
	b := EncodeXattrEntries(nil, es...)
	want := 0
	for _, e := range es {
		want += XattrEntrySize(len(e.Name), len(e.Value))
	}
	if len(b) != want {
		t.Fatalf("encoded %d bytes, want %d", len(b), want)
	}
	got, err := DecodeXattrEntries(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(es) {
		t.Fatalf("decoded %d entries, want %d", len(got), len(es))
	}
	for i := range es {
		if !bytes.Equal(got[i].Name, es[i].Name) || !bytes.Equal(got[i].Value, es[i].Value) {
			t.Errorf("entry %d: %q=%q, want %q=%q", i, got[i].Name, got[i].Value, es[i].Name, es[i].Value)
		}
	}
}

func TestXattrEntries_Corrupt(t *testing.T) {
	good := EncodeXattrEntries(nil, XattrEntry{Name: []byte("user.a"), Value: []byte("v")})
	for name, b := range map[string][]byte{
		"empty":      {},
		"short":      good[:3],
		"cut value":  good[:len(good)-1],
		"empty name": EncodeXattrEntries(nil, XattrEntry{Value: []byte("v")}),
		"long name":  EncodeXattrEntries(nil, XattrEntry{Name: bytes.Repeat([]byte("n"), XattrNameMax+1)}),
		"twice":      append(append([]byte(nil), good...), good...),
		"trailing":   append(append([]byte(nil), good...), 1),
	} {
		if _, err := DecodeXattrEntries(b); !errors.Is(err, ErrCorruption) {
			t.Errorf("%s: %v, want corruption", name, err)
		}
	}
}

// FuzzDecodeXattrEntries: any payload either decodes into entries that
// encode back to exactly it, or is corruption; never a panic.
func FuzzDecodeXattrEntries(f *testing.F) {
	f.Add(EncodeXattrEntries(nil, XattrEntry{Name: []byte("user.a"), Value: []byte("v")}))
	f.Add(EncodeXattrEntries(nil, XattrEntry{Name: []byte("user.a")}, XattrEntry{Name: []byte("user.b"), Value: []byte("xyz")}))
	f.Add([]byte{1, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := DecodeXattrEntries(b)
		if err != nil {
			if !errors.Is(err, ErrCorruption) {
				t.Fatalf("error %v is not corruption", err)
			}
			return
		}
		if enc := EncodeXattrEntries(nil, es...); !bytes.Equal(enc, b) {
			t.Fatalf("re-encoded %x, decoded from %x", enc, b)
		}
	})
}
