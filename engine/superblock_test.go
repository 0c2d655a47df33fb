package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"ustore/dev"
	"ustore/dev/memdev"
	"ustore/journal"
)

// Superblock redundancy: one damaged copy never loses acknowledged state, a
// checksummed copy with impossible fields is corruption, a fallback that may
// have lost acknowledged state is loud, and every crash during a superblock
// write still mounts (docs/design/engine.md §8).

// warnLog records the messages (with their attributes) logged at WARN and
// above.
type warnLog struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnLog) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	w.mu.Lock()
	w.msgs = append(w.msgs, b.String())
	w.mu.Unlock()
	return nil
}
func (w *warnLog) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnLog) WithGroup(string) slog.Handler      { return w }

// has reports whether a warning contains every one of subs.
func (w *warnLog) has(subs ...string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range w.msgs {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(m, s)
		}
		if all {
			return true
		}
	}
	return false
}

func (w *warnLog) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.msgs, "\n")
}

// superImage is a formatted memdev after a few acknowledged commits, each
// inserting superKeysPerCommit keys.
type superImage struct {
	d        *memdev.Device
	newest   superCopy       // the primary copy of the newest superblock
	previous journal.Transid // the generation of the superblock before it
	keys     uint64          // keys inserted in all
}

const superKeysPerCommit = 40

func newSuperImage(t *testing.T) superImage {
	t.Helper()
	e, d := newTestEngine(t, 16<<20, 4096)
	tr, err := e.Start()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateTree(tr, testTree); err != nil {
		t.Fatal(err)
	}
	tr.End()
	var keys uint64
	for range 4 {
		tr, err := e.Start()
		if err != nil {
			t.Fatal(err)
		}
		for range superKeysPerCommit {
			if err := e.Tree(testTree).InsertItem(tr, testKey(keys), testValue(keys, 50)); err != nil {
				t.Fatal(err)
			}
			keys++
		}
		tr.End()
		commit(t, e)
	}
	closeEngine(t, e)
	copies := readSuperCopies(d)
	for _, c := range copies {
		if c.state != copySound {
			t.Fatalf("fresh image: copy at %d: %v", c.off, c.err)
		}
	}
	img := superImage{d: d, keys: keys, newest: copies[0]}
	if copies[1].sb.Seq > img.newest.sb.Seq {
		img.newest, img.previous = copies[1], copies[0].sb.Generation
	} else {
		img.previous = copies[1].sb.Generation
	}
	return img
}

// newestCopies and olderCopies are the offsets of the two copies of the
// newest superblock and of the one before it.
func (img superImage) newestCopies() []uint64 { c := slotCopies(img.newest.sb.Seq); return c[:] }
func (img superImage) olderCopies() []uint64  { c := slotCopies(img.newest.sb.Seq + 1); return c[:] }

// mountLogged mounts d, logging warnings into a warnLog.
func mountLogged(d dev.Device) (*Engine, *warnLog, error) {
	w := &warnLog{}
	e, err := Mount(d, Options{Logger: slog.New(w), CommitInterval: 60e9})
	return e, w, err
}

// readCopy reads the superblock copy at off.
func readCopy(t *testing.T, d dev.Device, off uint64) superCopy {
	t.Helper()
	buf := dev.AlignedBuffer(superSize)
	if err := d.Read([]dev.IO{{Off: int64(off), Buf: buf}}); err != nil {
		t.Fatal(err)
	}
	return decodeSuperCopy(buf, off)
}

// flipCopy flips one byte of the copy at off, durably.
func flipCopy(t *testing.T, d dev.Device, off uint64, at int) {
	t.Helper()
	buf := dev.AlignedBuffer(superSize)
	if err := d.Read([]dev.IO{{Off: int64(off), Buf: buf}}); err != nil {
		t.Fatal(err)
	}
	buf[at] ^= 0x20
	if err := d.WriteDurable([]dev.IO{{Off: int64(off), Buf: buf}}); err != nil {
		t.Fatal(err)
	}
}

// writeCopy writes sb, checksummed, as the copy at off (its Bytenr as
// given), durably.
func writeCopy(t *testing.T, d dev.Device, off uint64, sb Superblock) {
	t.Helper()
	buf := dev.AlignedBuffer(superSize)
	sb.encode(buf)
	if err := d.WriteDurable([]dev.IO{{Off: int64(off), Buf: buf}}); err != nil {
		t.Fatal(err)
	}
}

// checkAcknowledged checks that e mounted the newest superblock of img:
// its generation, and every key of every commit.
func checkAcknowledged(t *testing.T, e *Engine, img superImage) {
	t.Helper()
	if got, want := e.sb.Generation, img.newest.sb.Generation; got != want {
		t.Fatalf("mounted generation %d, the acknowledged one is %d", got, want)
	}
	for i := range img.keys {
		if _, err := e.Tree(testTree).Lookup(testKey(i)); err != nil {
			t.Fatalf("key %d of an acknowledged commit: %v", i, err)
		}
	}
}

// TestMount_SuperblockCopy_OneFlipEach flips one byte in each of the four
// copies in turn after acknowledged commits: mount finds the acknowledged
// state every time, warns naming the copy, fsck reports it and stays clean,
// and a damaged copy of the newest superblock is rewritten at mount.
func TestMount_SuperblockCopy_OneFlipEach(t *testing.T) {
	for i := range 4 {
		img := newSuperImage(t)
		off := superCopyOffsets[i]
		newest := off == img.newestCopies()[0] || off == img.newestCopies()[1]
		t.Run(fmt.Sprintf("copy %d newest %v", off, newest), func(t *testing.T) {
			flipCopy(t, img.d, off, sbGeneration+3)
			e, w, err := mountLogged(img.d)
			if err != nil {
				t.Fatalf("mount with one damaged copy: %v", err)
			}
			defer closeEngine(t, e)
			checkAcknowledged(t, e, img)
			if !w.has("damaged superblock copy", fmt.Sprint(off)) {
				t.Errorf("no warning names the damaged copy at %d; warnings:\n%v", off, w)
			}
			r := Check(e)
			if err := r.Err(); err != nil {
				t.Fatalf("fsck: %v", err)
			}
			if !strings.Contains(fmt.Sprint(r.Warnings), fmt.Sprint(off)) {
				t.Errorf("fsck warnings do not name the copy at %d: %v", off, r.Warnings)
			}
			c := readCopy(t, img.d, off)
			switch {
			case newest && (c.state != copySound || c.sb.Seq != img.newest.sb.Seq):
				t.Errorf("the damaged copy of the newest superblock was not rewritten: %v", c.err)
			case !newest && c.state == copySound:
				t.Errorf("mount rewrote a copy of an older superblock")
			}
		})
	}
}

// TestMount_SuperblockImpossibleFields: a copy with a valid checksum but a
// node size of 0 or a root level of 200 is corruption. Beside a sound twin
// of the same sequence the twin mounts (and the copy is rewritten); with no
// sound copy of that sequence mount refuses rather than take an older one.
func TestMount_SuperblockImpossibleFields(t *testing.T) {
	nodeSize0 := func(sb *Superblock) { sb.NodeSize = 0 }
	level200 := func(sb *Superblock) { sb.Root.level = 200 }
	cases := []struct {
		name   string
		spoil  func(*Superblock)
		copies func(superImage) []uint64 // the copies spoiled
		next   bool                      // the spoiled copies carry the next sequence
		refuse bool
	}{
		{"node size 0 in the newest primary", nodeSize0, func(i superImage) []uint64 { return i.newestCopies()[:1] }, false, false},
		{"root level 200 in the newest mirror", level200, func(i superImage) []uint64 { return i.newestCopies()[1:] }, false, false},
		{"node size 0 in both newest copies", nodeSize0, func(i superImage) []uint64 { return i.newestCopies() }, false, true},
		{"root level 200 in both newest copies", level200, func(i superImage) []uint64 { return i.newestCopies() }, false, true},
		{"root level 200 in one copy of a newer sequence", level200, func(i superImage) []uint64 { return i.olderCopies()[:1] }, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			img := newSuperImage(t)
			for _, off := range tc.copies(img) {
				sb := img.newest.sb
				if tc.next {
					sb.Seq++
					sb.Generation++
				}
				sb.Bytenr = off
				tc.spoil(&sb)
				writeCopy(t, img.d, off, sb)
				if c := readCopy(t, img.d, off); c.state != copyImpossible {
					t.Fatalf("spoiled copy at %d: state %d, err %v", off, c.state, c.err)
				}
			}
			e, w, err := mountLogged(img.d)
			if tc.refuse {
				if err == nil {
					e.Close(context.Background())
					t.Fatalf("mounted generation %d past a checksummed superblock with impossible fields", e.sb.Generation)
				}
				if !errors.Is(err, ErrCorruption) || !strings.Contains(err.Error(), "refusing to mount") {
					t.Fatalf("mount: %v, want ErrCorruption refusing to mount", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("mount with a sound twin: %v", err)
			}
			defer closeEngine(t, e)
			checkAcknowledged(t, e, img)
			off := tc.copies(img)[0]
			if !w.has("valid checksum but", fmt.Sprint(off)) {
				t.Errorf("no warning names the copy at %d; warnings:\n%v", off, w)
			}
			check(t, e)
			if c := readCopy(t, img.d, off); c.state != copySound {
				t.Errorf("the copy at %d was not rewritten: %v", off, c.err)
			}
		})
	}
}

// TestMount_SuperblockBothNewestDamaged: with both copies of the newest
// superblock damaged, mount falls back to the one before — all it can do —
// but warns that acknowledged state may be lost, and fsck fails.
func TestMount_SuperblockBothNewestDamaged(t *testing.T) {
	img := newSuperImage(t)
	for _, off := range img.newestCopies() {
		flipCopy(t, img.d, off, 200)
	}
	e, w, err := mountLogged(img.d)
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	defer closeEngine(t, e)
	if e.sb.Generation != img.previous {
		t.Fatalf("mounted generation %d, want the previous one, %d", e.sb.Generation, img.previous)
	}
	if !w.has("MOUNTED AN OLDER SUPERBLOCK", "or else a superblock acknowledged after") {
		t.Errorf("no loud warning of a possible rollback; warnings:\n%v", w)
	}
	err = Check(e).Err()
	if err == nil || !strings.Contains(err.Error(), "neither copy") {
		t.Fatalf("fsck after a possible rollback: %v, want a problem", err)
	}
}

// TestEngine_Crash_SuperblockCopies cuts the power during the superblock
// writes of a commit — before their flush, keeping the primary, the mirror,
// both or neither, tearing either, or leaving garbage (what a disk that
// does not write a sector atomically may) in either or both — and mounts:
// always a crash-consistent state, the newest whenever one copy of it
// landed, and never a refusal.
func TestEngine_Crash_SuperblockCopies(t *testing.T) {
	img := newSuperImage(t)
	d := img.d
	e := mount(t, d)
	tr, err := e.Start()
	if err != nil {
		t.Fatal(err)
	}
	for i := img.keys; i < img.keys+superKeysPerCommit; i++ {
		if err := e.Tree(testTree).InsertItem(tr, testKey(i), testValue(i, 50)); err != nil {
			t.Fatal(err)
		}
	}
	tr.End()
	newGen := commitGen(t, e)
	ops := d.Ops()
	last := len(ops) - 1
	for last >= 0 && !(ops[last].Kind == memdev.OpWrite && ops[last].Off == int64(slotCopies(img.newest.sb.Seq + 1)[1])) {
		last--
	}
	if last < 1 || ops[last-1].Off != int64(slotCopies(img.newest.sb.Seq + 1)[0]) {
		t.Fatalf("no primary-then-mirror superblock write in the history")
	}
	closeEngine(t, e)
	at := ops[last].Seq
	if n := len(d.UnflushedAt(at)); n != 2 {
		t.Fatalf("%d unflushed writes at the superblock writes, want 2", n)
	}
	lose := &memdev.Tear{Pieces: memdev.MaskPieces(^uint64(1), superSize/dev.TornSize)}
	garbage := func(d *memdev.Device, off uint64) {
		buf := dev.AlignedBuffer(superSize)
		for i := range buf {
			buf[i] = byte(i*131 + 7)
		}
		if err := d.WriteDurable([]dev.IO{{Off: int64(off), Buf: buf}}); err != nil {
			t.Fatal(err)
		}
	}
	primary, mirror := slotCopies(img.newest.sb.Seq + 1)[0], slotCopies(img.newest.sb.Seq + 1)[1]
	cases := []struct {
		name      string
		keep      uint64 // bit 0: the primary, bit 1: the mirror
		tear      int    // -1 none, else the write torn (first piece lost)
		garbage   []uint64
		newest    bool
		lostAlarm bool
	}{
		{"neither", 0, -1, nil, false, false},
		{"primary only", 1, -1, nil, true, false},
		{"mirror only", 2, -1, nil, true, false},
		{"both", 3, -1, nil, true, false},
		{"primary, mirror torn", 1, 1, nil, true, false},
		{"mirror, primary torn", 2, 0, nil, true, false},
		{"primary, mirror garbage", 1, -1, []uint64{mirror}, true, false},
		{"mirror, primary garbage", 2, -1, []uint64{primary}, true, false},
		{"primary garbage, mirror lost", 0, -1, []uint64{primary}, false, false},
		{"both garbage", 0, -1, []uint64{primary, mirror}, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := memdev.KeepSubset(tc.keep)
			if tc.tear >= 0 {
				tear := *lose
				tear.Index = tc.tear
				p.Tear = &tear
			}
			c := d.CrashAt(at, p)
			for _, off := range tc.garbage {
				garbage(c, off)
			}
			ce, w, err := mountLogged(c)
			if err != nil {
				t.Fatalf("mount after the crash: %v", err)
			}
			defer closeEngine(t, ce)
			want, keys := img.newest.sb.Generation, img.keys
			if tc.newest {
				want, keys = newGen, img.keys+superKeysPerCommit
			}
			if ce.sb.Generation != want {
				t.Fatalf("mounted generation %d, want %d", ce.sb.Generation, want)
			}
			for i := range keys {
				if _, err := ce.Tree(testTree).Lookup(testKey(i)); err != nil {
					t.Fatalf("key %d: %v", i, err)
				}
			}
			r := Check(ce)
			if tc.lostAlarm {
				if r.Err() == nil || !w.has("MOUNTED AN OLDER SUPERBLOCK") {
					t.Fatalf("both copies of the newest slot garbage: fsck %v, warnings:\n%v", r.Err(), w)
				}
				return
			}
			if err := r.Err(); err != nil {
				t.Fatalf("fsck: %v", err)
			}
			if tc.newest {
				for _, off := range [2]uint64{primary, mirror} {
					if cp := readCopy(t, c, off); cp.state != copySound || cp.sb.Generation != newGen {
						t.Errorf("copy at %d after mount: state %d generation %d, want the newest on both", off, cp.state, cp.sb.Generation)
					}
				}
			}
		})
	}
}

// TestMount_SuperblockVersionAndBlank: an image of format version 1 gets
// ErrFormatVersion (not "not formatted"), a blank device ErrNotFormatted,
// and a device whose every copy is damaged ErrCorruption.
func TestMount_SuperblockVersionAndBlank(t *testing.T) {
	img := newSuperImage(t)
	for _, c := range readSuperCopies(img.d) {
		if c.off >= superMirrorDistance {
			// Version 1 had no mirrors: the space was zero.
			if err := img.d.WriteDurable([]dev.IO{{Off: int64(c.off), Buf: dev.AlignedBuffer(superSize)}}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		sb := c.sb
		sb.Version = 1
		writeCopy(t, img.d, c.off, sb)
	}
	_, err := Mount(img.d, Options{Logger: quiet()})
	if !errors.Is(err, ErrFormatVersion) || errors.Is(err, ErrNotFormatted) || !strings.Contains(err.Error(), "format version 1") {
		t.Errorf("version 1 image: %v, want ErrFormatVersion naming version 1", err)
	}

	_, err = Mount(memdev.New(16<<20), Options{Logger: quiet()})
	if !errors.Is(err, ErrNotFormatted) {
		t.Errorf("blank device: %v, want ErrNotFormatted", err)
	}

	img = newSuperImage(t)
	for _, off := range superCopyOffsets {
		flipCopy(t, img.d, off, 300)
	}
	_, err = Mount(img.d, Options{Logger: quiet()})
	if !errors.Is(err, ErrCorruption) || errors.Is(err, ErrNotFormatted) {
		t.Errorf("every copy damaged: %v, want ErrCorruption", err)
	}
}

// TestMount_SuperblockOldVersions: an image of format version 2 (a
// superblock per log sync, naming the log root where version 3 names the
// log chain), 3 (no symlinks, xattrs or orphan items, whose items a
// version 3 binary would misread), 4 (chain records without the delta
// kind) or 5 (the reverted overlapped log syncs) is refused with ErrFormatVersion naming both versions, before
// anything reads the fields whose meaning changed.
func TestMount_SuperblockOldVersions(t *testing.T) {
	for _, v := range []uint32{2, 3, 4, 5} {
		img := newSuperImage(t)
		for _, c := range readSuperCopies(img.d) {
			sb := c.sb
			sb.Version = v
			writeCopy(t, img.d, c.off, sb)
		}
		_, err := Mount(img.d, Options{Logger: quiet()})
		if !errors.Is(err, ErrFormatVersion) || !strings.Contains(err.Error(), fmt.Sprintf("format version %d", v)) ||
			!strings.Contains(err.Error(), fmt.Sprintf("this build reads version %d", FormatVersion)) {
			t.Errorf("version %d image: %v, want ErrFormatVersion naming versions %d and %d", v, err, v, FormatVersion)
		}
	}
}

// FuzzSuperblock_Choose decodes four arbitrary copies (seeded with a real
// superblock) and chooses among them: never a panic, and a chosen
// superblock is always a sound copy's, never older than a checksummed
// copy of a newer sequence.
func FuzzSuperblock_Choose(f *testing.F) {
	sb := Superblock{
		Version: FormatVersion, Seq: 3, Generation: 3, Root: rootRef{bytenr: firstAllocatable, generation: 2},
		TotalBytes: 16 << 20, BytesUsed: 64 << 10, NodeSize: 4096, SectorSize: SectorSize, CsumType: CsumCRC32C, NextIno: 257,
	}
	buf := make([]byte, superSize)
	for _, off := range slotCopies(sb.Seq) {
		c := sb
		c.Bytenr = off
		c.encode(buf)
		f.Add(bytes.Clone(buf[:256]), uint8(0), uint16(60))
	}
	f.Fuzz(func(t *testing.T, head []byte, which uint8, flip uint16) {
		var copies [4]superCopy
		for i, off := range superCopyOffsets {
			b := make([]byte, superSize)
			c := sb
			c.Seq += uint64(i / 2 * 2) // the mirrors hold a newer pair of sequences than the primaries
			c.Bytenr = off
			if i%2 != int(c.Seq%2) {
				c.Seq++
			}
			c.encode(b)
			if i == int(which%4) {
				copy(b, head)
				b[int(flip)%superSize] ^= 0x01
			}
			copies[i] = decodeSuperCopy(b, off)
		}
		ch, err := chooseSuperblock(copies)
		if err != nil {
			return
		}
		for _, c := range copies {
			if c.state >= copyImpossible && c.sb.Seq > ch.sb.Seq {
				t.Fatalf("chose seq %d over a checksummed copy of seq %d at %d", ch.sb.Seq, c.sb.Seq, c.off)
			}
		}
		if got := decodeSuperCopy(encoded(ch.sb, ch.from), ch.from); got.state != copySound {
			t.Fatalf("chose a superblock that is not sound: %v", got.err)
		}
	})
}

// encoded is sb encoded as the copy at off.
func encoded(sb Superblock, off uint64) []byte {
	b := make([]byte, superSize)
	sb.Bytenr = off
	sb.encode(b)
	return b
}
