package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"syscall"
	"testing"

	"ustore/dev/memdev"
	"ustore/engine"
)

// TestStore_Scrub_DataBlock: a flipped bit in a data block passes Check
// (it reads no data) but Scrub finds it, with the inode, the file offset,
// the device block and every path of the file (a hard link too), and
// reads every data byte — several batches' worth — exactly once.
func TestStore_Scrub_DataBlock(t *testing.T) {
	d := newTestDevice(t, 64<<20)
	s := openTest(t, d, Options{})
	sub, err := s.Mkdir(RootIno, "sub", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	var dataBytes uint64
	// a spans three extents; b..k are a megabyte each: more than the
	// workers' batches in flight; c is inline (no data block).
	inoA := mustCreate(t, s, RootIno, "a", patternData(1, 2<<20+1000))
	dataBytes += 2<<20 + blockSize // 513 blocks
	if _, err := s.Link(inoA, sub.Ino, "link-to-a"); err != nil {
		t.Fatal(err)
	}
	var inoB Ino
	for i := range 10 {
		ino := mustCreate(t, s, sub.Ino, fmt.Sprintf("b%d", i), patternData(byte(10+i), 1<<20))
		dataBytes += 1 << 20
		if i == 7 {
			inoB = ino
		}
	}
	mustCreate(t, s, RootIno, "c", []byte("inline"))
	s = remount(t, s, d, Options{})

	rep, err := s.Scrub(context.Background())
	if err != nil || rep.Err() != nil {
		t.Fatalf("scrub of a clean store: %v %v", err, rep.Err())
	}
	if rep.Bytes != dataBytes || rep.Extents < 11 {
		t.Fatalf("clean scrub read %d bytes in %d extents, want %d bytes", rep.Bytes, rep.Extents, dataBytes)
	}

	blkA, blkB := diskBlock(t, s, inoA, 300), diskBlock(t, s, inoB, 3)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	flipBit(t, d, blkA, 17, 0x04)
	flipBit(t, d, blkB, 4095, 0x80)
	s = openTest(t, d, Options{})
	defer s.Close(context.Background())
	if err := s.Check(); err != nil {
		t.Fatalf("Check (no data read) should pass: %v", err)
	}
	rep, err = s.Scrub(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.BadCount != 2 || len(rep.Bad) != 2 || rep.Err() == nil {
		t.Fatalf("scrub found %d bad blocks, want 2: %v", rep.BadCount, rep.Err())
	}
	want := []BadBlock{
		{Ino: inoA, Offset: 300 * blockSize, Bytenr: blkA, Paths: []string{"/a", "/sub/link-to-a"}},
		{Ino: inoB, Offset: 3 * blockSize, Bytenr: blkB, Paths: []string{"/sub/b7"}},
	}
	for i, w := range want {
		g := rep.Bad[i]
		if g.Ino != w.Ino || g.Offset != w.Offset || g.Bytenr != w.Bytenr || !slices.Equal(g.Paths, w.Paths) ||
			!errors.Is(g.Err, engine.ErrCorruption) {
			t.Fatalf("bad block %d: %v, want %v", i, g, w)
		}
	}
	if rep.Bytes != dataBytes {
		t.Fatalf("scrub read %d bytes, want %d", rep.Bytes, dataBytes)
	}
	if !strings.Contains(rep.Err().Error(), "inode "+fmt.Sprint(inoA)+" offset 1228800") {
		t.Fatalf("report: %v", rep.Err())
	}
}

// TestStore_Scrub_MissingChecksum: an extent whose checksums are gone is
// reported, not skipped.
func TestStore_Scrub_MissingChecksum(t *testing.T) {
	d := newTestDevice(t, 32<<20)
	s := openTest(t, d, Options{})
	ino := mustCreate(t, s, RootIno, "f", patternData(5, 64<<10))
	s = remount(t, s, d, Options{})
	disk := diskBlock(t, s, ino, 0)
	tr, err := s.Engine().Start()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.deleteCsums(tr, disk, 64<<10); err != nil {
		t.Fatal(err)
	}
	tr.End()
	if _, err := s.Engine().Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Scrub(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.BadCount != 1 || rep.Bad[0].Ino != ino || rep.Bad[0].Offset != 0 || !slices.Equal(rep.Bad[0].Paths, []string{"/f"}) {
		t.Fatalf("scrub: %v", rep.Err())
	}
	if err := s.Check(); err == nil {
		t.Fatal("Check finds data without checksums")
	}
	// The store is damaged on purpose: close without the usual check.
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// setInodeItem rewrites inode ino's item in the tree, committed: a forged
// item with a valid leaf checksum, as a damaged or hostile image holds.
func setInodeItem(t *testing.T, s *Store, ino Ino, change func(*engine.InodeItem)) {
	t.Helper()
	b, err := s.fs.Lookup(inodeKey(ino))
	if err != nil {
		t.Fatal(err)
	}
	it, err := engine.DecodeInodeItem(b)
	if err != nil {
		t.Fatal(err)
	}
	change(&it)
	enc := it.Encode(nil)
	tr, err := s.Engine().Start()
	if err != nil {
		t.Fatal(err)
	}
	err = s.fs.UpdateItem(tr, inodeKey(ino), func(d []byte) { copy(d, enc) })
	tr.End()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Engine().Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestStore_Check_ImpossibleFields: items whose fields the store can
// never write, each behind a valid leaf checksum, are reported: a file
// size of 2^63−1 (a sparse file of any size up to the limit is fine), an
// extent past the end of the device, and a
// generation newer than the newest commit.
func TestStore_Check_ImpossibleFields(t *testing.T) {
	cases := []struct {
		name   string
		change func(*engine.InodeItem)
		want   string
	}{
		{"size 2^63-1", func(it *engine.InodeItem) { it.Size = math.MaxInt64 }, "past the largest file size"},
		{"size 2^64-1", func(it *engine.InodeItem) { it.Size = math.MaxUint64 }, "past the largest file size"},
		{"transid in the future", func(it *engine.InodeItem) { it.Transid = 1 << 40 }, "newest commit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newTestDevice(t, 32<<20)
			s := openTest(t, d, Options{})
			ino := mustCreate(t, s, RootIno, "f", patternData(1, 10000))
			s = remount(t, s, d, Options{})
			setInodeItem(t, s, ino, c.change)
			err := s.Check()
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), fmt.Sprintf("inode %d", ino)) {
				t.Fatalf("Check: %v, want %q about inode %d", err, c.want, ino)
			}
			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("sparse file at the limit", func(t *testing.T) {
		d := newTestDevice(t, 32<<20)
		s := openTest(t, d, Options{})
		ino := mustCreate(t, s, RootIno, "f", []byte("x"))
		if err := s.Truncate(ino, MaxFileSize); err != nil {
			t.Fatal(err)
		}
		closeCheck(t, s)
	})
	t.Run("extent past the device", func(t *testing.T) {
		d := newTestDevice(t, 32<<20)
		s := openTest(t, d, Options{})
		ino := mustCreate(t, s, RootIno, "f", patternData(1, 3*blockSize))
		s = remount(t, s, d, Options{})
		key := extentKey(ino, 0)
		b, err := s.fs.Lookup(key)
		if err != nil {
			t.Fatal(err)
		}
		x, err := engine.DecodeFileExtent(b)
		if err != nil {
			t.Fatal(err)
		}
		x.DiskBytenr = engine.Bytenr(uint64(d.Size()) - blockSize)
		enc := x.Encode(nil)
		tr, err := s.Engine().Start()
		if err != nil {
			t.Fatal(err)
		}
		err = s.fs.UpdateItem(tr, key, func(d []byte) { copy(d, enc) })
		tr.End()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Engine().Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := s.Check(); err == nil || !strings.Contains(err.Error(), "outside the device") {
			t.Fatalf("Check: %v", err)
		}
		// Scrub does not read past the device: it leaves the extent to
		// Check.
		if _, err := s.Scrub(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestStore_Scrub_ReadError: a piece whose read fails is read again block
// by block; a block that fails again is reported by itself (inode, offset,
// the device's error), and the piece's other blocks are still checked.
func TestStore_Scrub_ReadError(t *testing.T) {
	d := newTestDevice(t, 32<<20)
	s := openTest(t, d, Options{})
	ino := mustCreate(t, s, RootIno, "f", patternData(9, 64<<10))
	s = remount(t, s, d, Options{})
	defer s.Close(context.Background())
	// A first scrub caches every tree node it needs: the reads counted
	// below are the data's alone.
	if rep, err := s.Scrub(context.Background()); err != nil || rep.BadCount != 0 {
		t.Fatalf("scrub: %v %v", err, rep.Err())
	}
	// Read 1 is the extent's (one piece, one IO); reads 2.. are its 16
	// blocks again, one by one: the 6th of them, block 5, fails too.
	d.InjectError(memdev.OpRead, 1, syscall.EIO)
	d.InjectError(memdev.OpRead, 7, syscall.EIO)
	rep, err := s.Scrub(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.BadCount != 1 || rep.Bad[0].Ino != ino || rep.Bad[0].Offset != 5*blockSize ||
		!errors.Is(rep.Bad[0].Err, memdev.ErrInjected) || !slices.Equal(rep.Bad[0].Paths, []string{"/f"}) {
		t.Fatalf("scrub: %v", rep.Err())
	}
	if rep.Bytes != 64<<10-blockSize {
		t.Fatalf("scrub checked %d bytes, want every block but the unreadable one", rep.Bytes)
	}
}
