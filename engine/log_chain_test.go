package engine

import (
	"strings"
	"testing"
)

// TestChainRecord_Decode_Rejects: a record decodes only at the block, in
// the chain, transaction and place (sequence, previous generation) its
// predecessor expects, with a checksum over what it says and sane fields;
// each departure ends the chain, for its own reason.
func TestChainRecord_Decode_Rejects(t *testing.T) {
	e, _ := newTestEngine(t, 16<<20, 4096)
	defer closeEngine(t, e)
	at := Bytenr(firstAllocatable + 64*4096)
	good := chainRecord{bytenr: at, id: 0xfeed, transid: 7, seq: 3,
		root: rootRef{bytenr: firstAllocatable + 8*4096, level: 1, generation: MakeLogGen(7, 5).Generation()},
		gen:  MakeLogGen(7, 5), prevGen: MakeLogGen(7, 2), next: at + 4096, digest: 0x1234}
	want := chainExpect{bytenr: at, id: 0xfeed, transid: 7, seq: 3, prevGen: MakeLogGen(7, 2)}
	if r, err := e.decodeChainRecord(good.encode(e.fsid, chainSize), want); err != nil || r != good {
		t.Fatalf("the expected record: %+v, %v", r, err)
	}
	for _, tc := range []struct {
		name   string
		change func(r *chainRecord, w *chainExpect, fsid *[16]byte, b []byte) []byte
		why    string
	}{
		{"torn", func(_ *chainRecord, _ *chainExpect, _ *[16]byte, b []byte) []byte { b[2000] ^= 1; return b }, "checksum"},
		{"another filesystem", func(_ *chainRecord, _ *chainExpect, f *[16]byte, _ []byte) []byte { f[0] ^= 1; return nil }, "not a log chain record"},
		{"another block", func(r *chainRecord, _ *chainExpect, _ *[16]byte, _ []byte) []byte { r.bytenr += 4096; return nil }, "a record of block"},
		{"another chain", func(r *chainRecord, _ *chainExpect, _ *[16]byte, _ []byte) []byte { r.id++; return nil }, "of chain"},
		{"another transaction", func(r *chainRecord, _ *chainExpect, _ *[16]byte, _ []byte) []byte { r.transid--; return nil }, "of chain"},
		{"an older record", func(r *chainRecord, _ *chainExpect, _ *[16]byte, _ []byte) []byte { r.seq--; return nil }, "sequence"},
		{"another predecessor", func(r *chainRecord, _ *chainExpect, _ *[16]byte, _ []byte) []byte {
			r.prevGen = MakeLogGen(7, 1)
			return nil
		}, "sequence"},
		{"a generation of another transaction", func(r *chainRecord, _ *chainExpect, _ *[16]byte, _ []byte) []byte {
			r.gen = MakeLogGen(6, 5)
			return nil
		}, "log generation"},
		{"a root newer than its sync", func(r *chainRecord, _ *chainExpect, _ *[16]byte, _ []byte) []byte {
			r.root.generation = MakeLogGen(7, 6).Generation()
			return nil
		}, "root generation"},
		{"no next block", func(r *chainRecord, _ *chainExpect, _ *[16]byte, _ []byte) []byte { r.next = 0; return nil }, "next record"},
		{"itself next", func(r *chainRecord, _ *chainExpect, _ *[16]byte, _ []byte) []byte { r.next = r.bytenr; return nil }, "next record"},
		{"a root outside the device", func(r *chainRecord, _ *chainExpect, _ *[16]byte, _ []byte) []byte {
			r.root.bytenr = 1 << 40
			return nil
		}, "log root at"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, w, fsid := good, want, e.fsid
			b := tc.change(&r, &w, &fsid, r.encode(e.fsid, chainSize))
			if b == nil {
				b = r.encode(fsid, chainSize)
			}
			_, err := e.decodeChainRecord(b, w)
			if err == nil || !strings.Contains(err.Error(), tc.why) {
				t.Fatalf("decode: %v; want a rejection for %q", err, tc.why)
			}
		})
	}
}
