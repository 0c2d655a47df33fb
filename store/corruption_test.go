package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"ustore/dev"
	"ustore/engine"
)

// Corruption tests: bits flipped on the device under a closed store, then
// a fresh mount (so nothing comes from the engine's node cache or the
// store's pages) reads them. A damaged data block fails exactly the reads
// that touch it, with EIO, counted and logged with its inode and offset;
// a damaged tree node fails the operations that need it with EIO, never a
// panic, and leaves the rest of the store usable.

// syncBuffer is a log sink safe for the store's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// patternData returns n bytes that differ per seed and per offset.
func patternData(seed byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31+i>>12) ^ seed
	}
	return b
}

// flipBit flips one bit of the 4 KiB block at bytenr, durably.
func flipBit(t *testing.T, d dev.Device, bytenr uint64, byteOff int, mask byte) {
	t.Helper()
	buf := dev.AlignedBuffer(blockSize)
	if err := d.Read([]dev.IO{{Off: int64(bytenr), Buf: buf}}); err != nil {
		t.Fatal(err)
	}
	buf[byteOff] ^= mask
	if err := d.WriteDurable([]dev.IO{{Off: int64(bytenr), Buf: buf}}); err != nil {
		t.Fatal(err)
	}
}

// diskBlock returns the device address of file block b of ino, from its
// EXTENT_DATA item read through the engine's tree API.
func diskBlock(t *testing.T, s *Store, ino Ino, b uint64) uint64 {
	t.Helper()
	off := b * blockSize
	var found uint64
	var derr error
	err := s.Engine().Tree(engine.FSTreeID).Iterate(extentKey(ino, 0), func(k engine.Key, v []byte) bool {
		if k.Ino() != ino || k.Type != engine.TypeExtentData || k.Offset > off {
			return false
		}
		x, err := engine.DecodeFileExtent(v)
		if err != nil {
			derr = err
			return false
		}
		if x.Type == engine.ExtentRegular && off < k.Offset+x.NumBytes {
			found = uint64(x.DiskBytenr) + off - k.Offset
			return false
		}
		return true
	})
	if err != nil || derr != nil {
		t.Fatalf("extents of %d: %v %v", ino, err, derr)
	}
	if found == 0 {
		t.Fatalf("inode %d block %d: no regular extent", ino, b)
	}
	return found
}

// remount closes s (checked) and opens d again with opts.
func remount(t *testing.T, s *Store, d dev.Device, opts Options) *Store {
	t.Helper()
	closeCheck(t, s)
	return openTest(t, d, opts)
}

func mustCreate(t *testing.T, s *Store, dir Ino, name string, data []byte) Ino {
	t.Helper()
	a, err := s.Create(dir, name, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 0 {
		if n, err := s.Write(a.Ino, 0, data); err != nil || n != len(data) {
			t.Fatalf("write %s: %d %v", name, n, err)
		}
	}
	return a.Ino
}

func wantEIO(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("%s: %v, want EIO", what, err)
	}
}

func TestCorrupt_DataBlock(t *testing.T) {
	d := newTestDevice(t, 64<<20)
	s := openTest(t, d, Options{})
	// a spans three extents (an extent is at most 1 MiB), b one, c is
	// inline (no data block: its bytes live in a checksummed leaf).
	dataA := patternData(1, 2<<20+1000)
	dataB := patternData(2, 600<<10)
	dataC := []byte("inline bytes")
	inoA := mustCreate(t, s, RootIno, "a", dataA)
	inoB := mustCreate(t, s, RootIno, "b", dataB)
	inoC := mustCreate(t, s, RootIno, "c", dataC)
	s = remount(t, s, d, Options{})

	const bad = 300 // a's block 300: inside its second extent
	bytenr := diskBlock(t, s, inoA, bad)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	flipBit(t, d, bytenr, 1234, 0x04)

	var logs syncBuffer
	opts := Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	s = openTest(t, d, opts)
	fails := uint64(0)

	// Every block of a read alone: only the damaged one fails, and with
	// nothing returned.
	nblocks := (len(dataA) + blockSize - 1) / blockSize
	for b := range nblocks {
		buf := make([]byte, blockSize)
		n, err := s.Read(inoA, uint64(b)*blockSize, buf)
		if b == bad {
			wantEIO(t, "read of the damaged block", err)
			if !errors.Is(err, engine.ErrCorruption) || n != 0 {
				t.Fatalf("read of the damaged block: n %d, err %v", n, err)
			}
			fails++
			continue
		}
		want := dataA[b*blockSize : min(len(dataA), (b+1)*blockSize)]
		if err != nil || n != len(want) || !bytes.Equal(buf[:n], want) {
			t.Fatalf("a block %d: n %d err %v, equal %v", b, n, err, bytes.Equal(buf[:n], want))
		}
	}
	// Unaligned ranges that touch it fail too, whichever end they touch.
	for _, r := range [][2]uint64{
		{bad*blockSize - 100, 200},                     // reaches in from the left
		{bad*blockSize + blockSize - 1, 2},             // reaches out to the right
		{bad*blockSize + 7, 1},                         // one byte inside
		{(bad - 10) * blockSize, 40 * blockSize},       // across it
		{0, uint64(len(dataA))},                        // the whole file
		{(bad - 256) * blockSize, 1<<20 + 3*blockSize}, // a previous extent and it
	} {
		n, err := s.Read(inoA, r[0], make([]byte, r[1]))
		wantEIO(t, fmt.Sprintf("read [%d,+%d)", r[0], r[1]), err)
		if n != 0 {
			t.Fatalf("read [%d,+%d): %d bytes returned with the error", r[0], r[1], n)
		}
		fails++
	}
	if _, err := s.Get("/a"); !errors.Is(err, syscall.EIO) {
		t.Fatalf("get /a: %v, want EIO", err)
	}
	fails++
	// Ranges that end right before it or start right after it are fine.
	for _, r := range [][2]uint64{{0, bad * blockSize}, {(bad + 1) * blockSize, uint64(len(dataA)) - (bad+1)*blockSize}} {
		buf := make([]byte, r[1])
		n, err := s.Read(inoA, r[0], buf)
		if err != nil || n != len(buf) || !bytes.Equal(buf, dataA[r[0]:r[0]+r[1]]) {
			t.Fatalf("read [%d,+%d) beside the damage: n %d err %v", r[0], r[1], n, err)
		}
	}
	// Other files are untouched.
	for _, f := range []struct {
		path string
		want []byte
	}{{"/b", dataB}, {"/c", dataC}} {
		got, err := s.Get(f.path)
		if err != nil || !bytes.Equal(got, f.want) {
			t.Fatalf("get %s: %v, equal %v", f.path, err, bytes.Equal(got, f.want))
		}
	}

	st := s.Stats()
	if st.CsumErrors == 0 || st.CsumErrors > fails {
		t.Fatalf("CsumErrors %d after %d failed reads", st.CsumErrors, fails)
	}
	log := logs.String()
	wantLog := fmt.Sprintf("ino=%d offset=%d bytenr=%d", inoA, bad*blockSize, bytenr)
	if !strings.Contains(log, "data checksum mismatch") || !strings.Contains(log, wantLog) {
		t.Fatalf("no log line naming %q:\n%s", wantLog, log)
	}

	// A partial write of the damaged block needs its old bytes: it fails
	// (EIO) rather than build on garbage, and changes nothing.
	if n, err := s.Write(inoA, bad*blockSize+10, []byte("xyz")); !errors.Is(err, syscall.EIO) || n != 0 {
		t.Fatalf("partial write of the damaged block: n %d, err %v, want EIO", n, err)
	}
	if a, err := s.Stat(inoA); err != nil || a.Size != uint64(len(dataA)) {
		t.Fatalf("stat a after the failed write: %+v %v", a, err)
	}
	if s.Stats().DirtyBytes != 0 {
		t.Fatalf("failed write left %d dirty bytes", s.Stats().DirtyBytes)
	}
	// Overwriting the whole block repairs the file: the new block is
	// checksummed afresh, the damaged one freed with its checksum.
	fix := patternData(9, blockSize)
	copy(dataA[bad*blockSize:], fix)
	if n, err := s.Write(inoA, bad*blockSize, fix); err != nil || n != blockSize {
		t.Fatalf("overwrite of the damaged block: %d %v", n, err)
	}
	s = remount(t, s, d, Options{})
	for _, f := range []struct {
		ino  Ino
		want []byte
	}{{inoA, dataA}, {inoB, dataB}, {inoC, dataC}} {
		buf := make([]byte, len(f.want))
		if n, err := s.Read(f.ino, 0, buf); err != nil || n != len(buf) || !bytes.Equal(buf, f.want) {
			t.Fatalf("inode %d after repair: n %d err %v", f.ino, n, err)
		}
	}
	if st := s.Stats(); st.CsumErrors != 0 {
		t.Fatalf("CsumErrors %d after repair", st.CsumErrors)
	}
	closeCheck(t, s)
}

// TestCorrupt_DataBlock_Fsck: Check verifies metadata and checksum coverage
// only; it does not read data blocks, so a damaged data block is found by
// reads (above), not by Check. This pins that down so a change to either
// is deliberate.
func TestCorrupt_DataBlock_Fsck(t *testing.T) {
	d := newTestDevice(t, 32<<20)
	s := openTest(t, d, Options{})
	ino := mustCreate(t, s, RootIno, "a", patternData(3, 64<<10))
	s = remount(t, s, d, Options{})
	bytenr := diskBlock(t, s, ino, 5)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	flipBit(t, d, bytenr, 0, 0x80)
	s = openTest(t, d, Options{})
	if err := s.Check(); err != nil {
		t.Fatalf("Check reads no data blocks, yet: %v", err)
	}
	_, err := s.Read(ino, 5*blockSize, make([]byte, 1))
	wantEIO(t, "read of the damaged block", err)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// leafOf returns the bytenr and key range of the leaf of tree id that
// holds key.
func leafOf(t *testing.T, s *Store, id uint64, key engine.Key) (bytenr uint64, first, last engine.Key) {
	t.Helper()
	var p engine.Path
	if _, err := s.Engine().Tree(id).SearchSlot(nil, key, &p, 0, false); err != nil {
		t.Fatalf("search %v: %v", key, err)
	}
	defer p.Release()
	leaf, _ := p.Leaf()
	return uint64(leaf.Bytenr()), leaf.Key(0), leaf.Key(leaf.ItemCount() - 1)
}

// rootOf returns the bytenr and level of tree id's root node, from the
// first node line of a dump that stops at the root.
func rootOf(t *testing.T, s *Store, id uint64) (bytenr uint64, level int) {
	t.Helper()
	var dump strings.Builder
	if err := s.Engine().Tree(id).DumpWith(&dump, engine.DumpOptions{Bytenrs: true, MinLevel: 1 << 10}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(dump.String(), "\n")
	if len(lines) < 2 {
		t.Fatalf("dump:\n%s", dump.String())
	}
	f := strings.Fields(lines[1])
	if len(f) < 2 {
		t.Fatalf("dump:\n%s", dump.String())
	}
	if _, err := fmt.Sscan(f[1], &bytenr); err != nil {
		t.Fatalf("dump line %q: %v", lines[1], err)
	}
	if f[0] == "node" {
		if _, err := fmt.Sscanf(strings.Join(f[2:4], " "), "level %d", &level); err != nil {
			t.Fatalf("dump line %q: %v", lines[1], err)
		}
	}
	return bytenr, level
}

func TestCorrupt_TreeLeaf(t *testing.T) {
	d := newTestDevice(t, 64<<20)
	s := openTest(t, d, Options{})
	const files = 1500
	inos := make([]Ino, files)
	for i := range files {
		inos[i] = mustCreate(t, s, RootIno, fmt.Sprintf("f%04d", i), fmt.Appendf(nil, "content of %d", i))
	}
	s = remount(t, s, d, Options{})

	// The leaf holding the items of a file in the middle: its inode item,
	// name ref and inline extent. The root directory's items (ino 256)
	// come first in the tree, so the leaf holds none of them.
	mid := inos[files/2]
	bytenr, first, last := leafOf(t, s, engine.FSTreeID, inodeKey(mid))
	if first.Ino() <= RootIno {
		t.Fatalf("leaf [%v, %v] holds root directory items", first, last)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	flipBit(t, d, bytenr, 2000, 0x01)

	s = openTest(t, d, Options{})
	// Inodes wholly inside the leaf (all their items are in it).
	inside := func(ino Ino) bool { return ino > first.Ino() && ino < last.Ino() }
	var victims []int
	for i, ino := range inos {
		if inside(ino) {
			victims = append(victims, i)
		}
	}
	if len(victims) < 3 {
		t.Fatalf("leaf [%v, %v] holds only %d whole inodes", first, last, len(victims))
	}
	for _, i := range victims {
		ino, name := inos[i], fmt.Sprintf("f%04d", i)
		_, err := s.Stat(ino)
		wantEIO(t, "stat "+name, err)
		_, err = s.Lookup(RootIno, name)
		wantEIO(t, "lookup "+name, err)
		_, err = s.Read(ino, 0, make([]byte, 10))
		wantEIO(t, "read "+name, err)
		_, err = s.Get("/" + name)
		wantEIO(t, "get "+name, err)
	}
	v := victims[0]
	_, err := s.Write(inos[v], 0, []byte("x"))
	wantEIO(t, "write", err)
	wantEIO(t, "truncate", s.Truncate(inos[v], 0))
	wantEIO(t, "unlink", s.Unlink(RootIno, fmt.Sprintf("f%04d", v)))
	wantEIO(t, "rename", s.Rename(RootIno, fmt.Sprintf("f%04d", v), RootIno, "moved"))
	_, err = s.Link(inos[v], RootIno, "hardlink")
	wantEIO(t, "link", err)
	if s.Engine().Stats().Corrupt == 0 {
		t.Fatal("corrupt node reads not counted")
	}
	if err := s.Check(); err == nil {
		t.Fatal("Check finds nothing wrong with a damaged leaf")
	} else if !errors.Is(err, engine.ErrCorruption) {
		t.Logf("Check: %v", err)
	}

	// Everything outside the leaf still works, reads and changes.
	// An inode with items on both sides of the leaf's bounds, or right
	// next to it, may fail too: finding where its items end reads the
	// next leaf.
	for i, ino := range inos {
		got, err := s.Get(fmt.Sprintf("/f%04d", i))
		want := fmt.Sprintf("content of %d", i)
		switch {
		case inside(ino):
		case ino+1 >= first.Ino() && ino <= last.Ino()+1:
			if err != nil {
				wantEIO(t, fmt.Sprintf("file %d at the leaf's edge", i), err)
			} else if string(got) != want {
				t.Fatalf("file %d at the leaf's edge: %q", i, got)
			}
		case err != nil || string(got) != want:
			t.Fatalf("file %d outside the leaf: %q %v", i, got, err)
		}
	}
	nw := mustCreate(t, s, RootIno, "new", []byte("new file"))
	if err := s.Unlink(RootIno, fmt.Sprintf("f%04d", 0)); err != nil {
		t.Fatalf("unlink outside the leaf: %v", err)
	}
	if err := s.Sync(context.Background()); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatalf("close: %v", err)
	}
	s = openTest(t, d, Options{})
	if got, err := s.Get("/new"); err != nil || string(got) != "new file" {
		t.Fatalf("new file after remount: %q %v (ino %d)", got, err, nw)
	}
	if _, err := s.Lookup(RootIno, "f0000"); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("unlinked file after remount: %v", err)
	}
	_, err = s.Stat(inos[v])
	wantEIO(t, "stat after remount", err)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestCorrupt_TreeRoot: a damaged root node of the fs tree makes Open fail
// with EIO-class corruption, not panic.
func TestCorrupt_TreeRoot(t *testing.T) {
	d := newTestDevice(t, 64<<20)
	s := openTest(t, d, Options{})
	for i := range 400 {
		mustCreate(t, s, RootIno, fmt.Sprintf("f%04d", i), []byte("x"))
	}
	s = remount(t, s, d, Options{})
	root, level := rootOf(t, s, engine.FSTreeID)
	if level < 1 {
		t.Fatalf("fs tree root at level %d: want an internal node", level)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	flipBit(t, d, root, 100, 0x20)
	s2, err := Open(d, Options{Logger: testLogger})
	if err == nil {
		s2.Close(context.Background())
		t.Fatal("open with a damaged fs tree root succeeded")
	}
	if !errors.Is(err, engine.ErrCorruption) || ErrnoOf(err) != syscall.EIO {
		t.Fatalf("open: %v (errno %v), want corruption / EIO", err, ErrnoOf(err))
	}
}

// TestCorrupt_CsumLeaf: a damaged csum tree leaf fails the reads of data
// whose checksums it holds with EIO; other data reads fine.
func TestCorrupt_CsumLeaf(t *testing.T) {
	d := newTestDevice(t, 64<<20)
	s := openTest(t, d, Options{})
	// Many one-block extents (one csum item each) so the csum tree has
	// several leaves.
	const files = 600
	inos := make([]Ino, files)
	datas := make([][]byte, files)
	for i := range files {
		datas[i] = patternData(byte(i), 8<<10)
		inos[i] = mustCreate(t, s, RootIno, fmt.Sprintf("f%04d", i), datas[i])
	}
	s = remount(t, s, d, Options{})
	disks := make([]uint64, files)
	for i := range files {
		disks[i] = diskBlock(t, s, inos[i], 0)
	}
	bytenr, firstK, lastK := leafOf(t, s, engine.CsumTreeID, csumKey(disks[files/2]))
	first, last := firstK.Offset, lastK.Offset
	// Each file is one extent with one checksum item keyed by its address.
	// Items in the leaf must fail; the item just before and just after it
	// may too (an iteration steps into the neighbouring leaf to find where
	// the range ends); all others must read fine.
	sorted := slices.Clone(disks)
	slices.Sort(sorted)
	lo, _ := slices.BinarySearch(sorted, first)
	hi, _ := slices.BinarySearch(sorted, last)
	var before, after uint64
	if lo > 0 {
		before = sorted[lo-1]
	}
	if hi+1 < len(sorted) {
		after = sorted[hi+1]
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	flipBit(t, d, bytenr, 3000, 0x02)

	var logs syncBuffer
	s = openTest(t, d, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	bad := 0
	for i := range files {
		buf := make([]byte, len(datas[i]))
		n, err := s.Read(inos[i], 0, buf)
		switch {
		case disks[i] >= first && disks[i] <= last:
			wantEIO(t, fmt.Sprintf("read of file %d (checksums in the damaged leaf)", i), err)
			bad++
		case disks[i] == before || disks[i] == after:
			if err != nil {
				wantEIO(t, fmt.Sprintf("read of file %d (checksums next to the damaged leaf)", i), err)
			} else if !bytes.Equal(buf, datas[i]) {
				t.Fatalf("file %d next to the damaged leaf: wrong bytes", i)
			}
		default:
			if err != nil || n != len(buf) || !bytes.Equal(buf, datas[i]) {
				t.Fatalf("file %d outside the damaged leaf: n %d, %v", i, n, err)
			}
		}
	}
	if bad == 0 {
		t.Fatal("no file has its checksums in the damaged leaf")
	}
	if !strings.Contains(logs.String(), "data checksums missing") {
		t.Fatalf("no log line for the missing checksums:\n%s", logs.String())
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestCorrupt_TreeLeaf_MidOperation damages a leaf that an operation
// reaches only after it has started changing the tree: unlink finds the
// name (DIR_ITEM, intact), deletes it, then meets the damaged leaf that
// holds the DIR_INDEX. The operation fails with EIO, nothing panics, the
// half-done change is never committed, and after a remount the store is as
// it was before.
func TestCorrupt_TreeLeaf_MidOperation(t *testing.T) {
	d := newTestDevice(t, 64<<20)
	s := openTest(t, d, Options{})
	const files = 1500
	inos := make([]Ino, files)
	for i := range files {
		inos[i] = mustCreate(t, s, RootIno, fmt.Sprintf("f%04d", i), nil)
	}
	s = remount(t, s, d, Options{})
	// DIR_INDEX offsets start at 2 and follow creation order.
	bytenr, first, last := leafOf(t, s, engine.FSTreeID, dirIndexKey(RootIno, 2+files/2))
	if first.Ino() != RootIno || first.Type != engine.TypeDirIndex || last.Type != engine.TypeDirIndex {
		t.Fatalf("leaf [%v, %v]: want only root DIR_INDEX items", first, last)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	flipBit(t, d, bytenr, 1000, 0x40)

	var logs syncBuffer
	s = openTest(t, d, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	victim := int(first.Offset-2) + 1
	name := fmt.Sprintf("f%04d", victim)
	// Lookups use DIR_ITEM: fine.
	if a, err := s.Lookup(RootIno, name); err != nil || a.Ino != inos[victim] {
		t.Fatalf("lookup %s: %+v %v", name, a, err)
	}
	err := s.Unlink(RootIno, name)
	t.Logf("unlink through the damaged leaf: %v", err)
	wantEIO(t, "unlink "+name, err)
	// The running transaction holds half an unlink: the store is read-only
	// from now on (each later change fails with EROFS or the EIO that
	// caused it), and no sync may commit it.
	for i := range 5 {
		_, err := s.Create(RootIno, fmt.Sprintf("g%d", i), 0o644)
		if e := ErrnoOf(err); e != syscall.EROFS && e != syscall.EIO {
			t.Fatalf("create after the aborted unlink: %v", err)
		}
	}
	if err := s.Sync(context.Background()); err == nil {
		t.Fatal("sync after the aborted unlink succeeded")
	}
	if err := s.Close(context.Background()); err == nil {
		t.Fatal("close after the aborted unlink succeeded")
	}

	s = openTest(t, d, Options{})
	// The half-done unlink was not committed: the name is still there.
	if a, err := s.Lookup(RootIno, name); err != nil || a.Ino != inos[victim] {
		t.Fatalf("lookup %s after remount: %+v %v", name, a, err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
