package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"
	"syscall"
	"testing"

	"ustore/dev"
	"ustore/dev/memdev"
)

// A damaged log is reported and not applied; a failed log sync reaches the
// fsync that asked for it, and nothing an fsync acknowledged is lost.

// The on-disk offsets these tests read (engine/format.go, engine/superblock.go,
// docs/FORMAT.md): the two superblock slots, and in a superblock its
// magic, sequence and log root (bytenr u64, level u8, generation u64); in a
// node header its level and item count, and an internal node's pointers
// (key 17 bytes, child bytenr u64, child generation u64) after the header.
const (
	lcSuperSlot0  = 64 << 10
	lcSuperSlot1  = 128 << 10
	lcSuperSize   = 4096
	lcSbMagic     = 32
	lcSbSeq       = 48
	lcSbLogChain  = 88 // the log chain's head, then the chain id
	lcHdrLevel    = 52
	lcHdrNritems  = 56
	lcHeaderSize  = 64
	lcPtrSize     = 17 + 16
	lcPtrBytenr   = 17
	lcTestNodeLen = 4096 // newTestDevice's node size
)

var lcMagic = []byte("_USTORE1")

// lcRead reads n bytes at off from d.
func lcRead(t *testing.T, d *memdev.Device, off int64, n int) []byte {
	t.Helper()
	buf := dev.AlignedBuffer(n)
	if err := d.Read([]dev.IO{{Off: off, Buf: buf}}); err != nil {
		t.Fatalf("read %d+%d: %v", off, n, err)
	}
	return buf
}

// The log chain record (engine/log_chain.go): checksum, fsid, bytenr,
// magic, chain id, transaction, sequence, log root (bytenr, level,
// generation), then the next record's block.
const (
	lcRecBytenr  = 24
	lcRecMagic   = 32
	lcRecID      = 40
	lcRecSeq     = 56
	lcRecRoot    = 64
	lcRecGen     = 88
	lcRecPrevGen = 96
	lcRecNext    = 104
	lcRecKind    = 116 // 0 checkpoint, 1 delta
	lcRecPayload = 128
)

var lcRecMagicBytes = []byte("_USTLOG6")

// lcRecord is a record of the log chain as a test reads it: where it
// lives and the log root it names.
type lcRecord struct {
	at, root uint64
	level    int
}

// lcLogChain follows the log chain that d's newest superblock names and
// returns its records, oldest first: those with a valid checksum, the
// chain's id and the next sequence (the test's own reading of the rules).
func lcLogChain(t *testing.T, d *memdev.Device) []lcRecord {
	t.Helper()
	sb := lcNewestSuper(t, d)
	at, id := binary.LittleEndian.Uint64(sb[lcSbLogChain:]), binary.LittleEndian.Uint64(sb[lcSbLogChain+8:])
	var recs []lcRecord
	for seq := uint64(1); at != 0; seq++ {
		b := lcRead(t, d, int64(at), 4096)
		if crc32.Checksum(b[8:], crc32.MakeTable(crc32.Castagnoli)) != binary.LittleEndian.Uint32(b) ||
			!bytes.Equal(b[lcRecMagic:lcRecMagic+8], lcRecMagicBytes) || binary.LittleEndian.Uint64(b[lcRecBytenr:]) != at ||
			binary.LittleEndian.Uint64(b[lcRecID:]) != id || binary.LittleEndian.Uint64(b[lcRecSeq:]) != seq {
			break
		}
		recs = append(recs, lcRecord{at: at, root: binary.LittleEndian.Uint64(b[lcRecRoot:]), level: int(b[lcRecRoot+8])})
		at = binary.LittleEndian.Uint64(b[lcRecNext:])
	}
	return recs
}

// lcNewestSuper returns the primary superblock copy of the highest
// sequence.
func lcNewestSuper(t *testing.T, d *memdev.Device) []byte {
	t.Helper()
	var best []byte
	for _, slot := range []int64{lcSuperSlot0, lcSuperSlot1} {
		b := lcRead(t, d, slot, lcSuperSize)
		if !bytes.Equal(b[lcSbMagic:lcSbMagic+8], lcMagic) {
			continue
		}
		if best == nil || binary.LittleEndian.Uint64(b[lcSbSeq:]) > binary.LittleEndian.Uint64(best[lcSbSeq:]) {
			best = b
		}
	}
	if best == nil {
		t.Fatal("no superblock")
	}
	return best
}

// lcLogRoot returns the log root (bytenr, level) that the newest record of
// d's log chain names; bytenr 0: none.
func lcLogRoot(t *testing.T, d *memdev.Device) (uint64, int) {
	t.Helper()
	recs := lcLogChain(t, d)
	if len(recs) == 0 {
		return 0, 0
	}
	r := recs[len(recs)-1]
	return r.root, r.level
}

// lcTreeLeaves returns the leaves of the log tree under root, left to
// right.
func lcTreeLeaves(t *testing.T, d *memdev.Device, root uint64) (leaves []uint64) {
	t.Helper()
	var walk func(bytenr uint64)
	walk = func(bytenr uint64) {
		b := lcRead(t, d, int64(bytenr), lcTestNodeLen)
		if b[lcHdrLevel] == 0 {
			leaves = append(leaves, bytenr)
			return
		}
		n := int(binary.LittleEndian.Uint32(b[lcHdrNritems:]))
		for i := range n {
			walk(binary.LittleEndian.Uint64(b[lcHeaderSize+i*lcPtrSize+lcPtrBytenr:]))
		}
	}
	walk(root)
	return leaves
}

// lcFlip flips one byte of the node at bytenr on d (and flushes).
func lcFlip(t *testing.T, d *memdev.Device, bytenr uint64, at int) {
	t.Helper()
	b := lcRead(t, d, int64(bytenr), lcTestNodeLen)
	b[at] ^= 0x40
	if err := d.Write([]dev.IO{{Off: int64(bytenr), Buf: b}}); err != nil {
		t.Fatal(err)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
}

// lcContent reads the whole of the file name in dir; ok false if there
// is no such name.
func lcContent(t *testing.T, s *Store, dir Ino, name string) ([]byte, bool) {
	t.Helper()
	a, err := s.Lookup(dir, name)
	if errors.Is(err, syscall.ENOENT) {
		return nil, false
	}
	if err != nil {
		t.Fatalf("lookup %q: %v", name, err)
	}
	buf := make([]byte, a.Size)
	n, err := s.Read(a.Ino, 0, buf)
	if err != nil || n != len(buf) {
		t.Fatalf("read %q: %d of %d, %v", name, n, len(buf), err)
	}
	return buf, true
}

// TestLogCorrupt_DamagedLogNotApplied: fsyncs logged (not committed), each
// its own log sync, a power cut that keeps everything, one byte flipped in
// one node of the newest log sync's tree and in the same node of the one
// before: the mount succeeds, reports the log lost and applies none of it —
// the store is at its last commit, fsck clean — and clears the log, so that
// a second mount (after another power cut) does not find it again. Damage
// to the newest sync's tree alone is what a power cut during that sync
// leaves: replay applies the sync before it ("newest-only").
func TestLogCorrupt_DamagedLogNotApplied(t *testing.T) {
	for _, tc := range []struct {
		name  string
		big   bool // log a directory of 2,000 new entries: a log of several levels
		which string
	}{
		{"one-leaf-root", false, "root"},
		{"big-root", true, "root"},
		{"big-first-leaf", true, "first-leaf"},
		{"big-last-leaf", true, "last-leaf"},
		{"newest-only", false, "newest-root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			d := newTestDevice(t, 64<<20)
			s := openTest(t, d, crashOptionsNodes()) // damage to log nodes: every sync writes them
			a, err := s.Create(RootIno, "committed", 0o644)
			if err != nil {
				t.Fatal(err)
			}
			va := crashData(1, 0, 3*blockSize+10)
			if _, err := s.Write(a.Ino, 0, va); err != nil {
				t.Fatal(err)
			}
			if err := s.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			commits := s.Engine().Stats().Commits

			if _, err := s.Write(a.Ino, blockSize, crashData(2, blockSize, 2*blockSize)); err != nil {
				t.Fatal(err)
			}
			n, err := s.Create(RootIno, "new", 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Write(n.Ino, 0, crashData(3, 0, 5000)); err != nil {
				t.Fatal(err)
			}
			fsyncs := []Ino{a.Ino, n.Ino}
			if tc.big {
				dir, err := s.Mkdir(RootIno, "many", 0o755)
				if err != nil {
					t.Fatal(err)
				}
				for i := range 2000 {
					if _, err := s.Create(dir.Ino, fmt.Sprintf("entry-%05d", i), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				fsyncs = append(fsyncs, dir.Ino)
			}
			for _, ino := range fsyncs {
				if err := s.Fsync(ctx, ino, false); err != nil {
					t.Fatal(err)
				}
			}
			if st := s.Stats(); st.FsyncLogged != uint64(len(fsyncs)) || st.FsyncCommit != 0 || s.Engine().Stats().Commits != commits {
				t.Fatalf("the fsyncs were not all logged: %+v", st)
			}

			c := d.Crash(memdev.KeepAll())
			s.Close(ctx)
			recs := lcLogChain(t, c)
			if len(recs) != len(fsyncs) {
				t.Fatalf("log chain of %d records after %d log syncs", len(recs), len(fsyncs))
			}
			flipped := map[uint64]bool{}
			for i, r := range recs[len(recs)-2:] {
				if tc.which == "newest-root" && i == 0 {
					continue
				}
				leaves := lcTreeLeaves(t, c, r.root)
				if tc.big && i == 1 && len(leaves) < 2 {
					t.Fatalf("log of %d leaves, want several", len(leaves))
				}
				target := r.root
				switch tc.which {
				case "first-leaf":
					target = leaves[0]
				case "last-leaf":
					target = leaves[len(leaves)-1]
				}
				if !flipped[target] {
					lcFlip(t, c, target, lcTestNodeLen/2+17)
					flipped[target] = true
				}
				t.Logf("log sync %d: root %d, %d leaves; flipped a byte of node %d", len(recs)-1+i, r.root, len(leaves), target)
			}

			s2, err := Open(c, crashOptions())
			if err != nil {
				t.Fatalf("open with a damaged log: %v", err)
			}
			rep := s2.Replay()
			t.Logf("replay: %+v", rep)
			if err := cpCheck(s2); err != nil {
				t.Fatalf("fsck: %v", err)
			}
			if tc.which == "newest-root" {
				// The sync before the newest: a's change, not n.
				if !rep.Found || !rep.Applied || rep.Lost != nil {
					t.Fatalf("replay with the newest log sync damaged: %+v; want the one before it applied", rep)
				}
				want := bytes.Clone(va)
				copy(want[blockSize:], crashData(2, blockSize, 2*blockSize))
				if got, ok := lcContent(t, s2, RootIno, "committed"); !ok || !bytes.Equal(got, want) {
					t.Fatalf("committed file: present %v, %d bytes; want the content its fsync logged", ok, len(got))
				}
				if _, err := s2.Lookup(RootIno, "new"); !errors.Is(err, syscall.ENOENT) {
					t.Fatalf("new: %v; want it absent (only the damaged log sync had it)", err)
				}
				closeCheck(t, s2)
				return
			}
			if !rep.Found || rep.Applied || rep.Lost == nil {
				t.Fatalf("replay of a damaged log: %+v; want found, not applied, lost", rep)
			}
			if got, ok := lcContent(t, s2, RootIno, "committed"); !ok || !bytes.Equal(got, va) {
				t.Fatalf("committed file: present %v, %d bytes; want its committed %d bytes", ok, len(got), len(va))
			}
			for _, name := range []string{"new", "many"} {
				if _, err := s2.Lookup(RootIno, name); !errors.Is(err, syscall.ENOENT) {
					t.Fatalf("%q: %v; want it absent (only the damaged log had it)", name, err)
				}
			}
			if r, _ := lcLogRoot(t, c); r != 0 {
				t.Fatalf("after the mount the superblock still names a log (root %d)", r)
			}

			// A power cut right after that mount: the next mount finds
			// no log, and the same state.
			c2 := c.Crash(memdev.KeepNone())
			s2.Close(ctx)
			s3, err := Open(c2, crashOptions())
			if err != nil {
				t.Fatal(err)
			}
			if rep := s3.Replay(); rep.Found {
				t.Fatalf("second mount found a log again: %+v", rep)
			}
			if got, ok := lcContent(t, s3, RootIno, "committed"); !ok || !bytes.Equal(got, va) {
				t.Fatalf("second mount: committed file present %v, %d bytes", ok, len(got))
			}
			// And it works: new data, synced, fsck clean.
			x, err := s3.Create(RootIno, "after", 0o644)
			if err == nil {
				_, err = s3.Write(x.Ino, 0, crashData(4, 0, 3*blockSize))
			}
			if err == nil {
				err = s3.Fsync(ctx, x.Ino, false)
			}
			if err != nil {
				t.Fatal(err)
			}
			closeCheck(t, s3)
		})
	}
}

// TestLogCorrupt_LogSyncFlushError: the flush of the log sync fails (the
// one after its nodes and chain record): the fsync
// that asked for it gets the error; a retry never claims success for data
// that is not durable; after a power cut (keeping none or all of the
// unflushed writes) everything acknowledged is there, and fsck is clean.
func TestLogCorrupt_LogSyncFlushError(t *testing.T) {
	for _, flush := range []int{1} { // a log sync's only flush (format 3)
		for _, keep := range []string{"none", "all"} {
			t.Run(fmt.Sprintf("flush%d-keep-%s", flush, keep), func(t *testing.T) {
				ctx := context.Background()
				d := newTestDevice(t, 64<<20)
				s := openTest(t, d, crashOptions())
				a, err := s.Create(RootIno, "a", 0o644)
				if err != nil {
					t.Fatal(err)
				}
				va := crashData(1, 0, 2*blockSize+1)
				if _, err := s.Write(a.Ino, 0, va); err != nil {
					t.Fatal(err)
				}
				if err := s.Sync(ctx); err != nil {
					t.Fatal(err)
				}
				// b: logged and acknowledged.
				b, err := s.Create(RootIno, "b", 0o644)
				if err != nil {
					t.Fatal(err)
				}
				vb := crashData(2, 0, 3*blockSize+2)
				if _, err := s.Write(b.Ino, 0, vb); err != nil {
					t.Fatal(err)
				}
				if err := s.Fsync(ctx, b.Ino, false); err != nil {
					t.Fatal(err)
				}
				if st := s.Stats(); st.FsyncLogged != 1 {
					t.Fatalf("b's fsync was not logged: %+v", st)
				}
				// a: changed, its log sync's flush fails.
				va2 := bytes.Clone(va)
				copy(va2[100:], crashData(3, 100, blockSize))
				if _, err := s.Write(a.Ino, 100, va2[100:100+blockSize]); err != nil {
					t.Fatal(err)
				}
				before := d.Seq()
				d.InjectError(memdev.OpFlush, flush, syscall.EIO)
				err = s.Fsync(ctx, a.Ino, false)
				t.Logf("fsync with flush %d failing: %v", flush, err)
				if err == nil {
					t.Fatal("fsync succeeded although its log sync's flush failed")
				}
				if !errors.Is(err, syscall.EIO) && !errors.Is(err, dev.ErrIO) {
					t.Errorf("fsync error %v: not EIO", err)
				}
				var failed *memdev.Op
				writes := 0
				for _, op := range d.Ops() {
					if op.Seq <= before {
						continue
					}
					if op.Kind == memdev.OpWrite && failed == nil {
						writes++
					}
					if op.Err != nil && failed == nil {
						failed = &op
					}
				}
				if failed == nil || failed.Kind != memdev.OpFlush || writes == 0 {
					t.Fatalf("the injected error did not fail a flush after the log's writes: %v after %d writes", failed, writes)
				}
				// A retry must not say the data is durable unless it is.
				retry := s.Fsync(ctx, a.Ino, false)
				t.Logf("retried fsync: %v", retry)
				bAgain := s.Fsync(ctx, b.Ino, false)

				pol := memdev.KeepNone()
				if keep == "all" {
					pol = memdev.KeepAll()
				}
				c := d.Crash(pol)
				s.Close(ctx)
				s2, err := Open(c, crashOptions())
				if err != nil {
					t.Fatalf("open after the failed log sync: %v", err)
				}
				defer s2.Close(ctx)
				t.Logf("replay: %+v", s2.Replay())
				if err := cpCheck(s2); err != nil {
					t.Fatalf("fsck: %v", err)
				}
				if got, ok := lcContent(t, s2, RootIno, "b"); !ok || !bytes.Equal(got, vb) {
					t.Fatalf("b (fsync acknowledged, then %v): present %v, %d bytes, want %d", bAgain, ok, len(got), len(vb))
				}
				got, ok := lcContent(t, s2, RootIno, "a")
				switch {
				case !ok:
					t.Fatal("a: gone")
				case retry == nil && !bytes.Equal(got, va2):
					t.Fatalf("a: the retried fsync succeeded, but a holds %d bytes not its new content (old: %v)", len(got), bytes.Equal(got, va))
				case !bytes.Equal(got, va) && !bytes.Equal(got, va2):
					t.Fatalf("a: %d bytes, neither its committed nor its new content", len(got))
				}
			})
		}
	}
}

// TestLogCorrupt_FlushErrorParallel: eight goroutines write and fsync
// their own files; a flush fails while they run. Every fsync that failed
// says so, and after a power cut each file holds what its last
// acknowledged fsync made durable, or something later.
func TestLogCorrupt_FlushErrorParallel(t *testing.T) {
	for _, nth := range []int{3, 8, 15} {
		t.Run(fmt.Sprintf("flush-%d", nth), func(t *testing.T) {
			ctx := context.Background()
			d := newTestDevice(t, 64<<20)
			s := openTest(t, d, crashOptions())
			dir, err := s.Mkdir(RootIno, "d", 0o755)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			// Each worker overwrites and extends a small file and fsyncs
			// it, round after round, until an fsync fails (after the
			// failed flush the engine is read-only: every later one does).
			const workers, maxRounds = 8, 400
			type record struct {
				ino      Ino
				versions [][]byte // content after each write; [0] empty
				acked    int      // the version the last acknowledged fsync covers; -1 none
				errs     int
			}
			recs := make([]*record, workers)
			d.InjectError(memdev.OpFlush, nth, syscall.EIO)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := &record{acked: -1, versions: [][]byte{nil}}
					recs[w] = r
					a, err := s.Create(dir.Ino, fmt.Sprintf("f%d", w), 0o644)
					if err != nil {
						return
					}
					r.ino = a.Ino
					for i := range maxRounds {
						cur := r.versions[len(r.versions)-1]
						off := (i * 3001) % 16384
						data := crashData(w*1000+i, off, 1000+i%7*300)
						if _, err := s.Write(a.Ino, uint64(off), data); err != nil {
							return
						}
						next := make([]byte, max(len(cur), off+len(data)))
						copy(next, cur)
						copy(next[off:], data)
						r.versions = append(r.versions, next)
						if err := s.Fsync(ctx, a.Ino, i%2 == 1); err != nil {
							r.errs++
							return
						}
						r.acked = len(r.versions) - 1
					}
				}()
			}
			wg.Wait()
			failedFsyncs := 0
			for _, r := range recs {
				failedFsyncs += r.errs
			}
			if failedFsyncs == 0 {
				t.Fatalf("no fsync failed, although flush %d failed", nth)
			}
			st := s.Stats()
			t.Logf("%d fsyncs failed; stats: %d logged, %d commit", failedFsyncs, st.FsyncLogged, st.FsyncCommit)
			for _, keep := range []memdev.CrashPolicy{memdev.KeepNone(), memdev.KeepAll()} {
				c := d.Crash(keep)
				s2, err := Open(c, crashOptions())
				if err != nil {
					t.Fatalf("open: %v", err)
				}
				if err := cpCheck(s2); err != nil {
					t.Fatalf("fsck: %v", err)
				}
				for w, r := range recs {
					got, ok := lcContent(t, s2, dir.Ino, fmt.Sprintf("f%d", w))
					if !ok {
						if r.acked >= 0 {
							t.Fatalf("worker %d: file gone, but fsync of version %d acknowledged", w, r.acked)
						}
						continue
					}
					if !crashContentOK(got, r.versions[max(r.acked, 0):]) {
						t.Fatalf("worker %d: %d bytes, not a version from %d on (of %d)", w, len(got), r.acked, len(r.versions))
					}
				}
				s2.Close(ctx)
			}
			s.Close(ctx)
		})
	}
}

// TestLogCorrupt_ReadErrorAtMount: a mount of a store with a pending log
// whose k-th read fails (EIO) — for every k, so the superblocks, the trees
// and the log chain's records each get their turn — returns an error or
// mounts; it never panics. (A failed read of the chain once indexed an
// empty list of log candidates.)
func TestLogCorrupt_ReadErrorAtMount(t *testing.T) {
	ctx := context.Background()
	d := newTestDevice(t, 16<<20)
	s := openTest(t, d, crashOptions())
	a, err := s.Create(RootIno, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := s.Write(a.Ino, uint64(i)*blockSize, crashData(i, 0, blockSize)); err != nil {
			t.Fatal(err)
		}
		if err := s.Fsync(ctx, a.Ino, false); err != nil {
			t.Fatal(err)
		}
	}
	c := d.Crash(memdev.KeepAll())
	s.Close(ctx)
	failedMounts := 0
	for k := 1; ; k++ {
		ck := c.Crash(memdev.KeepAll())
		ck.InjectError(memdev.OpRead, k, syscall.EIO)
		s2, err := Open(ck, crashOptions())
		if err != nil {
			failedMounts++
			continue
		}
		s2.Close(ctx)
		if k > 200 {
			break // past every read a mount makes; the fault no longer fires
		}
	}
	if failedMounts == 0 {
		t.Fatal("no injected read error failed a mount")
	}
}
