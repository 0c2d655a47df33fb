package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"ustore/dev"
	"ustore/dev/memdev"
)

// The log chain's crash rules (engine/log_chain.go, docs/design/logtree.md
// "The log chain"), each as a power cut that the general crash harness
// (crash_test.go) reaches only by chance: a log sync's data lost beside its
// durable record, and a stale record that verifies where the chain goes
// next.

// TestLogChain_Crash_DataLost: a log sync's record and nodes are durable
// but the data its fsync wrote is not — all three sat unflushed before its
// one flush, and a power cut keeps any subset. Replay must see that the
// logged data does not match its logged checksums and apply the sync
// before (or none): the file holds what the last completed sync or commit
// says, never extents over stale blocks.
func TestLogChain_Crash_DataLost(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before int
		opts   Options
	}{
		{"delta/0-syncs-before", 0, crashOptions()}, {"delta/1-syncs-before", 1, crashOptions()},
		{"nodes/0-syncs-before", 0, crashOptionsNodes()}, {"nodes/1-syncs-before", 1, crashOptionsNodes()},
	} {
		before := tc.before
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			d := newTestDevice(t, 64<<20)
			s := openTest(t, d, tc.opts)
			a, err := s.Create(RootIno, "f", 0o644)
			if err != nil {
				t.Fatal(err)
			}
			want := crashData(1, 0, 3*blockSize+10)
			if _, err := s.Write(a.Ino, 0, want); err != nil {
				t.Fatal(err)
			}
			if err := s.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			write := func(step int) []byte {
				v := bytes.Clone(want)
				copy(v[blockSize:], crashData(step, blockSize, 2*blockSize))
				if _, err := s.Write(a.Ino, blockSize, v[blockSize:3*blockSize]); err != nil {
					t.Fatal(err)
				}
				return v
			}
			for i := range before {
				want = write(2 + i)
				if err := s.Fsync(ctx, a.Ino, false); err != nil {
					t.Fatal(err)
				}
			}
			write(9)
			h := d.HoldNext(memdev.HoldWriteDurable) // the log sync, after the data write
			done := make(chan error, 1)
			go func() { done <- s.Fsync(ctx, a.Ino, false) }()
			<-h.Held()
			dataSeq := d.Seq()
			h.Release()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if st := s.Stats(); st.FsyncLogged != uint64(before+1) {
				t.Fatalf("%d fsyncs logged, want %d (fallbacks %v)", st.FsyncLogged, before+1, st.FsyncFallbacks)
			}
			// The cut: just before the log sync's flush, keeping its
			// nodes and record and losing the data written before them.
			ops := d.Ops()
			flush := ops[len(ops)-1]
			if flush.Kind != memdev.OpFlush {
				t.Fatalf("the fsync ended with %v, not its flush", flush.Kind)
			}
			kept, lost := 0, 0
			c := d.CrashAt(flush.Seq-1, memdev.CrashPolicy{Keep: func(_ int, w memdev.Write) bool {
				if w.Seq > dataSeq {
					kept++
					return true
				}
				lost++
				return false
			}})
			s.Close(ctx)
			// The log sync's writes: its record (a delta), or its nodes
			// and record (a checkpoint).
			if st := s.e.Stats(); kept < 1 || lost == 0 || st.LogDeltas == 0 && kept < 2 || (st.LogDeltas != 0) == tc.opts.Ablations.LogNodesEverySync {
				t.Fatalf("the cut kept %d writes and lost %d, %d of %d log syncs deltas; want the log's kept and the data lost", kept, lost, st.LogDeltas, st.LogSyncs)
			}
			s2, err := Open(c, crashOptions())
			if err != nil {
				t.Fatal(err)
			}
			rep := s2.Replay()
			t.Logf("replay: %+v", rep)
			if rep.Lost != nil || rep.Applied != (before > 0) {
				t.Fatalf("replay: %+v; want applied %v (the sync before the cut's), nothing lost", rep, before > 0)
			}
			if got, ok := lcContent(t, s2, RootIno, "f"); !ok || !bytes.Equal(got, want) {
				t.Fatalf("f: present %v, %d bytes; want the content of the last completed sync", ok, len(got))
			}
			closeCheck(t, s2)
		})
	}
}

// TestLogChain_Crash_StaleRecord: where the chain goes next lies a record
// with a valid checksum and the right bytenr — one of another chain (an
// older transaction's log: its blocks are freed and reused) made to carry
// the sequence and previous generation this chain expects there, the same
// under this chain's id, or an older record of this very chain (whose tree
// is still intact on the device: applying it would roll back an
// acknowledged fsync). Replay must end the chain before it and apply the
// newest record of this chain.
func TestLogChain_Crash_StaleRecord(t *testing.T) {
	for _, tc := range []struct {
		name, forge string
		opts        Options
	}{
		{"delta/older-chain", "older-chain", crashOptions()}, {"delta/other-transaction", "other-transaction", crashOptions()},
		{"delta/older-record", "older-record", crashOptions()},
		{"nodes/older-chain", "older-chain", crashOptionsNodes()}, {"nodes/other-transaction", "other-transaction", crashOptionsNodes()},
		{"nodes/older-record", "older-record", crashOptionsNodes()},
	} {
		forge := tc.forge
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			d := newTestDevice(t, 64<<20)
			s := openTest(t, d, tc.opts)
			a, err := s.Create(RootIno, "f", 0o644)
			if err != nil {
				t.Fatal(err)
			}
			fsync := func(step int) []byte {
				v := crashData(step, 0, 2*blockSize)
				if _, err := s.Write(a.Ino, 0, v); err != nil {
					t.Fatal(err)
				}
				if err := s.Fsync(ctx, a.Ino, false); err != nil {
					t.Fatal(err)
				}
				return v
			}
			fsync(1)
			old := lcLogChain(t, d)
			if len(old) != 1 {
				t.Fatalf("log chain of %d records after one log sync", len(old))
			}
			stale := lcRead(t, d, int64(old[0].at), 4096)
			if err := s.Sync(ctx); err != nil { // a new chain
				t.Fatal(err)
			}
			want := fsync(2)
			if forge == "older-record" {
				stale = lcRead(t, d, int64(lcLogChain(t, d)[0].at), 4096)
				want = fsync(3)
			}
			cur := lcLogChain(t, d)
			if n := len(cur); forge != "older-record" && n != 1 || forge == "older-record" && n != 2 {
				t.Fatalf("new log chain of %d records", n)
			}
			rec := lcRead(t, d, int64(cur[len(cur)-1].at), 4096)
			next := binary.LittleEndian.Uint64(rec[lcRecNext:])
			// The forgery: the stale record, moved to where this chain
			// goes next.
			binary.LittleEndian.PutUint64(stale[lcRecBytenr:], next)
			switch forge {
			case "other-transaction":
				copy(stale[lcRecID:lcRecID+8], rec[lcRecID:lcRecID+8])
				fallthrough
			case "older-chain":
				binary.LittleEndian.PutUint64(stale[lcRecSeq:], uint64(len(cur)+1))
				copy(stale[lcRecPrevGen:lcRecPrevGen+8], rec[lcRecGen:lcRecGen+8])
			}
			binary.LittleEndian.PutUint32(stale, crc32.Checksum(stale[8:], crc32.MakeTable(crc32.Castagnoli)))
			if err := d.WriteDurable([]dev.IO{{Off: int64(next), Buf: stale}}); err != nil {
				t.Fatal(err)
			}
			c := d.Crash(memdev.KeepAll())
			s.Close(ctx)
			s2, err := Open(c, crashOptions())
			if err != nil {
				t.Fatal(err)
			}
			rep := s2.Replay()
			t.Logf("replay: %+v", rep)
			if !rep.Applied || rep.Lost != nil {
				t.Fatalf("replay: %+v; want this chain's newest record applied", rep)
			}
			if got, ok := lcContent(t, s2, RootIno, "f"); !ok || !bytes.Equal(got, want) {
				t.Fatalf("f: present %v, %d bytes; want what its last fsync logged", ok, len(got))
			}
			closeCheck(t, s2)
		})
	}
}

// TestLogChain_Crash_StaleNodes: a power cut during the first log sync of
// transaction T keeps its nodes but not its record, so mount finds no log
// and T runs again — with the same chain, the same log generations and,
// the allocator being deterministic, the same node blocks. A second cut,
// during the new first sync, keeps only its record: the blocks it names
// hold the first run's nodes, of the generation the record expects, with
// valid checksums. The record's digest of the nodes its sync wrote must
// reject them: the first run's write was never acknowledged, and the mount
// after it had shown the file without it.
func TestLogChain_Crash_StaleNodes(t *testing.T) {
	ctx := context.Background()
	d := newTestDevice(t, 64<<20)
	s := openTest(t, d, crashOptionsNodes()) // a record over stale nodes: a checkpoint
	v1 := crashData(1, 0, 2*blockSize)
	ino := lcCommittedFile(t, s, v1)
	// cutFsync writes v to f, fsyncs it, and returns the device as a cut
	// just before the log sync's flush leaves it, keeping the writes keep
	// chooses, and the log root the sync's record names.
	cutFsync := func(s *Store, d *memdev.Device, v []byte, keep func(head uint64, w memdev.Write) bool) (*memdev.Device, uint64) {
		t.Helper()
		if _, err := s.Write(ino, 0, v); err != nil {
			t.Fatal(err)
		}
		if err := s.Fsync(ctx, ino, false); err != nil {
			t.Fatal(err)
		}
		ops := d.Ops()
		recs := lcLogChain(t, d)
		if len(recs) != 1 {
			t.Fatalf("log chain of %d records after one log sync", len(recs))
		}
		flush := ops[len(ops)-1]
		if flush.Kind != memdev.OpFlush {
			t.Fatalf("the fsync ended with %v, not its flush", flush.Kind)
		}
		c := d.CrashAt(flush.Seq-1, memdev.CrashPolicy{Keep: func(_ int, w memdev.Write) bool { return keep(recs[0].at, w) }})
		s.Close(ctx)
		return c, recs[0].root
	}
	// Both runs start from a fresh mount of the same committed state, so
	// that they allocate alike.
	c0 := d.Crash(memdev.KeepNone())
	s.Close(ctx)
	s1, err := Open(c0, crashOptionsNodes())
	if err != nil {
		t.Fatal(err)
	}
	c1, root1 := cutFsync(s1, c0, crashData(2, 0, 2*blockSize), func(head uint64, w memdev.Write) bool { return uint64(w.Off) != head })
	s2, err := Open(c1, crashOptionsNodes())
	if err != nil {
		t.Fatal(err)
	}
	if rep := s2.Replay(); rep.Found {
		t.Fatalf("replay after a cut that lost the record: %+v; want no log", rep)
	}
	if got, ok := lcContent(t, s2, RootIno, "f"); !ok || !bytes.Equal(got, v1) {
		t.Fatalf("f after the first cut: present %v, %d bytes; want its committed content", ok, len(got))
	}
	c2, root2 := cutFsync(s2, c1, crashData(3, 0, 2*blockSize), func(head uint64, w memdev.Write) bool { return uint64(w.Off) == head })
	if root1 != root2 {
		t.Fatalf("the second run's log root is at %d, the first's at %d: the allocator is not deterministic, and this test does not test", root2, root1)
	}
	s3, err := Open(c2, crashOptions())
	if err != nil {
		t.Fatal(err)
	}
	rep := s3.Replay()
	t.Logf("replay: %+v", rep)
	if rep.Applied || rep.Lost != nil {
		t.Fatalf("replay: %+v; want nothing applied (no sync completed), nothing lost", rep)
	}
	if got, ok := lcContent(t, s3, RootIno, "f"); !ok || !bytes.Equal(got, v1) {
		t.Fatalf("f: present %v, %d bytes; want its committed content (neither fsync completed)", ok, len(got))
	}
	closeCheck(t, s3)
}

// TestLogChain_NoChain_FsyncCommits: a transaction whose superblock names
// no log chain (the device was full when the commit before it allocated
// the head) cannot log: its fsyncs commit (fallback log_full), the store
// stays writable, and the commit names a chain for the next transaction,
// whose fsyncs log again.
func TestLogChain_NoChain_FsyncCommits(t *testing.T) {
	ctx := context.Background()
	d := newTestDevice(t, 64<<20)
	s := openTest(t, d, crashOptions())
	a, err := s.Create(RootIno, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	c := d.Crash(memdev.KeepNone())
	s.Close(ctx)
	// The newest superblock, both copies, without a chain.
	sb := lcNewestSuper(t, c)
	clear(sb[lcSbLogChain : lcSbLogChain+16])
	for _, off := range []uint64{binary.LittleEndian.Uint64(sb[lcRecBytenr:]), binary.LittleEndian.Uint64(sb[lcRecBytenr:]) + 512<<10} {
		b := bytes.Clone(sb)
		binary.LittleEndian.PutUint64(b[lcRecBytenr:], off)
		binary.LittleEndian.PutUint32(b, crc32.Checksum(b[8:], crc32.MakeTable(crc32.Castagnoli)))
		if err := c.WriteDurable([]dev.IO{{Off: int64(off), Buf: b}}); err != nil {
			t.Fatal(err)
		}
	}
	s2, err := Open(c, crashOptions())
	if err != nil {
		t.Fatal(err)
	}
	fsync := func(step int) []byte {
		v := crashData(step, 0, 2*blockSize)
		if _, err := s2.Write(a.Ino, 0, v); err != nil {
			t.Fatal(err)
		}
		if err := s2.Fsync(ctx, a.Ino, false); err != nil {
			t.Fatalf("fsync %d: %v", step, err)
		}
		return v
	}
	fsync(1)
	if st := s2.Stats(); st.FsyncCommit != 1 || st.FsyncFallbacks["log_full"] != 1 || st.FsyncLogged != 0 {
		t.Fatalf("fsync without a log chain: %+v; want one commit, fallback log_full", st)
	}
	want := fsync(2)
	if st := s2.Stats(); st.FsyncLogged != 1 {
		t.Fatalf("fsync after the commit: %+v; want it logged", st)
	}
	c2 := c.Crash(memdev.KeepNone())
	s2.Close(ctx)
	s3, err := Open(c2, crashOptions())
	if err != nil {
		t.Fatal(err)
	}
	if rep := s3.Replay(); !rep.Applied {
		t.Fatalf("replay: %+v; want the logged fsync applied", rep)
	}
	if got, ok := lcContent(t, s3, RootIno, "f"); !ok || !bytes.Equal(got, want) {
		t.Fatalf("f: present %v, %d bytes; want what its last fsync logged", ok, len(got))
	}
	closeCheck(t, s3)
}

// lcCommittedFile creates /f holding data and commits it: the state the
// log chain cases start from.
func lcCommittedFile(t *testing.T, s *Store, data []byte) Ino {
	t.Helper()
	a, err := s.Create(RootIno, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(a.Ino, 0, data); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	return a.Ino
}
