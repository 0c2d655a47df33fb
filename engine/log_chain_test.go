package engine

import (
	"bytes"
	"strings"
	"testing"

	"ustore/dev"
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
	if r, _, err := e.decodeChainRecord(good.encode(e.fsid, chainSize, nil), want); err != nil || r != good {
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
			b := tc.change(&r, &w, &fsid, r.encode(e.fsid, chainSize, nil))
			if b == nil {
				b = r.encode(fsid, chainSize, nil)
			}
			_, _, err := e.decodeChainRecord(b, w)
			if err == nil || !strings.Contains(err.Error(), tc.why) {
				t.Fatalf("decode: %v; want a rejection for %q", err, tc.why)
			}
		})
	}
}

// TestChainRecord_Delta: a delta record carries its payload (here longer
// than a sector: the checksum covers the record rounded up to whole
// sectors, and replay reads the rest), names its predecessor's root (none
// before the first checkpoint), and is rejected when torn anywhere in its
// payload, when it names another root, when its length claims more than a
// block holds, or when a checkpoint claims a payload.
func TestChainRecord_Delta(t *testing.T) {
	e, _ := newTestEngine(t, 16<<20, 16384)
	defer closeEngine(t, e)
	at := Bytenr(firstAllocatable + 64*16384)
	prevRoot := rootRef{bytenr: firstAllocatable + 8*16384, level: 1, generation: MakeLogGen(7, 2).Generation()}
	good := chainRecord{bytenr: at, id: 0xfeed, transid: 7, seq: 3, root: prevRoot,
		gen: MakeLogGen(7, 5), prevGen: MakeLogGen(7, 4), next: at + 16384, digest: crc32c(nil), delta: true}
	want := chainExpect{bytenr: at, id: 0xfeed, transid: 7, seq: 3, prevGen: MakeLogGen(7, 4), prevRoot: prevRoot}
	payload := make([]byte, 6000)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	n := chainRecordLen(len(payload))
	if n != 2*SectorSize {
		t.Fatalf("a record with %d bytes of payload: %d bytes, want two sectors", len(payload), n)
	}
	b := good.encode(e.fsid, n, payload)
	r, got, err := e.decodeChainRecord(b, want)
	if err != nil || r != good || !bytes.Equal(got, payload) {
		t.Fatalf("the expected delta: %+v, %d bytes of payload, %v", r, len(got), err)
	}
	// Read back from the device as replay reads it: a sector, then the rest.
	if err := e.dev.Write([]dev.IO{{Off: int64(at), Buf: b}}); err != nil {
		t.Fatal(err)
	}
	r, got, ok, err := e.readChainRecord(want)
	if err != nil || !ok || r != good || !bytes.Equal(got, payload) {
		t.Fatalf("read from the device: %+v, %d bytes, ok %v, %v", r, len(got), ok, err)
	}
	first := chainRecord{bytenr: at, id: 0xfeed, transid: 7, seq: 1, gen: MakeLogGen(7, 1), next: at + 16384, digest: crc32c(nil), delta: true}
	if _, _, err := e.decodeChainRecord(first.encode(e.fsid, chainSize, []byte{1}), chainExpect{bytenr: at, id: 0xfeed, transid: 7, seq: 1}); err != nil {
		t.Fatalf("a first delta, no checkpoint before it: %v", err)
	}
	for _, tc := range []struct {
		name string
		b    func() []byte
		w    chainExpect
		why  string
	}{
		{"torn in the second sector", func() []byte { c := bytes.Clone(b); c[5000] ^= 1; return c }, want, "checksum"},
		{"another root", func() []byte { return good.encode(e.fsid, n, payload) },
			chainExpect{bytenr: at, id: 0xfeed, transid: 7, seq: 3, prevGen: MakeLogGen(7, 4), prevRoot: rootRef{bytenr: prevRoot.bytenr + 16384, level: 1, generation: prevRoot.generation}}, "a delta naming log root"},
		{"no root where one was", func() []byte {
			r := good
			r.root = rootRef{}
			return r.encode(e.fsid, n, payload)
		}, want, "a delta naming log root"},
		{"a length past the block", func() []byte {
			c := bytes.Clone(b)
			le.PutUint32(c[chainPayloadLen:], uint32(e.LogDeltaMax()+1))
			return c
		}, want, "payload of"},
		{"a checkpoint with a payload", func() []byte {
			r := good
			r.delta = false
			return r.encode(e.fsid, n, payload)
		}, want, "with a payload"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := e.decodeChainRecord(tc.b(), tc.w); err == nil || !strings.Contains(err.Error(), tc.why) {
				t.Fatalf("decode: %v; want a rejection for %q", err, tc.why)
			}
		})
	}
}
