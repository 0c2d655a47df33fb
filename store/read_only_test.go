package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"ustore/dev"
	"ustore/dev/memdev"
	"ustore/engine"
)

// imageHash hashes every byte of d.
func imageHash(t *testing.T, d dev.Device) [32]byte {
	t.Helper()
	h := sha256.New()
	buf := dev.AlignedBuffer(1 << 20)
	for off := int64(0); off < d.Size(); off += int64(len(buf)) {
		b := buf[:min(int64(len(buf)), d.Size()-off)]
		if err := d.Read([]dev.IO{{Off: off, Buf: b}}); err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// level1Node is an internal node just above the leaves, and the keys it
// covers: [first, next's first).
type level1Node struct {
	bytenr uint64
	first  engine.Key
}

// level1Nodes returns the level-1 nodes of tree id in key order, from a
// dump that stops above the leaves.
func level1Nodes(t *testing.T, s *Store, id uint64) []level1Node {
	t.Helper()
	var dump strings.Builder
	if err := s.Engine().Tree(id).DumpWith(&dump, engine.DumpOptions{Bytenrs: true, MinLevel: 1}); err != nil {
		t.Fatal(err)
	}
	var out []level1Node
	for _, l := range strings.Split(dump.String(), "\n") {
		var n level1Node
		var gen, items int
		var k engine.Key
		_, err := fmt.Sscanf(strings.TrimSpace(l), "node %d level 1 gen %d items %d keys (%d %d %d)",
			&n.bytenr, &gen, &items, &k.ObjectID, &k.Type, &k.Offset)
		if err == nil {
			n.first = k
			out = append(out, n)
		}
	}
	return out
}

// nodeCovering returns the level-1 node whose keys include k.
func nodeCovering(t *testing.T, ns []level1Node, k engine.Key) level1Node {
	t.Helper()
	for i := len(ns) - 1; i >= 0; i-- {
		if !k.Less(ns[i].first) {
			return ns[i]
		}
	}
	t.Fatalf("no level-1 node covers %v", k)
	return level1Node{}
}

// TestStore_OpenReadOnly_DamagedTree: one damaged node that a read-write
// mount reads eagerly — the fs tree's rightmost internal node (the scan
// for the highest inode number), the internal node over the root
// directory's last entries (a directory's next index, read when it is
// loaded), a free space tree leaf (the allocator is rebuilt from it) —
// makes Open fail. A read-only Open skips those reads and mounts: every
// file outside the damaged node reads back intact, reads through it fail
// with EIO, every change fails with EROFS, fsync and sync succeed, and
// the device's bytes are unchanged after the store is closed.
func TestStore_OpenReadOnly_DamagedTree(t *testing.T) {
	type victim struct {
		bytenr uint64
		first  engine.Key // the damaged node's first key (fs tree), or MinKey
	}
	cases := []struct {
		name string
		pick func(t *testing.T, s *Store, files []Ino) victim
	}{
		{"fs tree rightmost internal node", func(t *testing.T, s *Store, _ []Ino) victim {
			ns := level1Nodes(t, s, engine.FSTreeID)
			n := ns[len(ns)-1]
			return victim(n)
		}},
		{"fs tree node under the root's last entries", func(t *testing.T, s *Store, _ []Ino) victim {
			ns := level1Nodes(t, s, engine.FSTreeID)
			n := nodeCovering(t, ns, engine.InoKey(RootIno, engine.TypeDirIndex, ^uint64(0)))
			if !inodeKey(RootIno).Less(n.first) {
				t.Fatalf("the node at %v holds the root's inode item too", n.first)
			}
			return victim(n)
		}},
		{"free space tree leaf", func(t *testing.T, s *Store, _ []Ino) victim {
			b, _, _ := leafOf(t, s, engine.FreeSpaceTreeID, engine.MinKey)
			return victim{b, engine.MaxKey}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newTestDevice(t, 64<<20)
			s := openTest(t, d, Options{})
			// Enough entries for two level-1 nodes in the fs tree with the
			// root directory's last entries in the second one.
			const files = 5000
			inos := make([]Ino, files)
			content := func(i int) []byte {
				if i%100 == 0 { // some files with data blocks
					return patternData(byte(i), 5000)
				}
				return fmt.Appendf(nil, "content of %d", i)
			}
			for i := range files {
				inos[i] = mustCreate(t, s, RootIno, fmt.Sprintf("f%04d", i), content(i))
			}
			s = remount(t, s, d, Options{})
			v := c.pick(t, s, inos)
			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			flipBit(t, d, v.bytenr, 200, 0x10)

			if s, err := Open(d, Options{Logger: testLogger}); err == nil {
				s.Close(context.Background())
				t.Fatal("read-write open with the damaged node succeeded: the test does not damage what mount reads")
			}
			before := imageHash(t, d)
			s, err := Open(d, Options{Logger: testLogger, ReadOnly: true})
			if err != nil {
				t.Fatalf("read-only open: %v", err)
			}
			intact, damaged, ok := 0, 0, -1
			for i, ino := range inos {
				got, err := s.Get(fmt.Sprintf("/f%04d", i))
				switch {
				case err == nil:
					if string(got) != string(content(i)) {
						t.Fatalf("file %d: %q", i, got)
					}
					intact++
					ok = i
				case errors.Is(err, syscall.EIO):
					// Only a file with items under the damaged node, or
					// right before it (finding where its items end reads
					// the next leaf), or whose name is under it (in the
					// root's items).
					if ino+1 < v.first.Ino() && !strings.Contains(c.name, "root") {
						t.Fatalf("file %d (ino %d) before the damaged node: %v", i, ino, err)
					}
					damaged++
				default:
					t.Fatalf("file %d: %v", i, err)
				}
			}
			if intact < files/3 {
				t.Fatalf("only %d of %d files readable", intact, files)
			}
			if strings.Contains(c.name, "fs tree") && damaged == 0 {
				t.Fatal("no read went through the damaged node")
			}
			t.Logf("%d files intact, %d EIO", intact, damaged)

			name := fmt.Sprintf("f%04d", ok) // an intact file
			erofs := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, syscall.EROFS) {
					t.Fatalf("%s: %v, want EROFS", what, err)
				}
			}
			_, err = s.Create(RootIno, "new", 0o644)
			erofs("create", err)
			_, err = s.Mkdir(RootIno, "newdir", 0o755)
			erofs("mkdir", err)
			_, err = s.Write(inos[ok], 0, []byte("x"))
			erofs("write", err)
			erofs("truncate", s.Truncate(inos[ok], 0))
			_, err = s.SetAttr(inos[ok], SetAttr{Mode: new(uint32(0o600))})
			erofs("setattr", err)
			erofs("unlink", s.Unlink(RootIno, name))
			erofs("rmdir", s.Rmdir(RootIno, name))
			erofs("rename", s.Rename(RootIno, name, RootIno, "g"))
			_, err = s.Link(inos[ok], RootIno, "hardlink")
			erofs("link", err)
			_, err = s.Symlink(RootIno, "symlink", "target")
			erofs("symlink", err)
			_, err = s.Put(context.Background(), "/put", []byte("data"), true)
			erofs("put", err)
			if err := s.Fsync(context.Background(), inos[ok], false); err != nil {
				t.Fatalf("fsync: %v", err)
			}
			if err := s.Sync(context.Background()); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if st := s.StatFS(); st.BlocksAvail != 0 || st.Blocks == 0 || st.BlocksFree == 0 {
				t.Fatalf("statfs: %+v", st)
			}
			if err := s.Close(context.Background()); err != nil {
				t.Fatalf("close: %v", err)
			}
			if imageHash(t, d) != before {
				t.Fatal("the read-only mount changed the device")
			}
		})
	}
}

// TestStore_OpenReadOnly_PendingLog: a read-only open of a device whose
// superblock names an fsync log refuses with ErrLogReplayNeeded, writing
// nothing; with SkipLogReplay it serves the last commit (without the
// logged file), writing nothing; once a read-write mount has replayed the
// log, the read-only open serves the fsynced data.
func TestStore_OpenReadOnly_PendingLog(t *testing.T) {
	d := newTestDevice(t, 32<<20)
	s := openTest(t, d, crashOptions())
	ino := mustCreate(t, s, RootIno, "f", []byte("fsynced"))
	if err := s.Fsync(context.Background(), ino, false); err != nil {
		t.Fatal(err)
	}
	c := d.Crash(memdev.KeepNone())
	s.Close(context.Background()) // its device is gone for the test
	before := imageHash(t, c)
	_, err := Open(c, Options{Logger: testLogger, ReadOnly: true})
	if !errors.Is(err, ErrLogReplayNeeded) || !strings.Contains(err.Error(), "ustore fsck") {
		t.Fatalf("read-only open with a log to replay: %v", err)
	}
	if imageHash(t, c) != before {
		t.Fatal("the refused read-only open changed the device")
	}
	// Skipping the log serves the last commit, which has no f.
	if _, err := Open(c, Options{Logger: testLogger, SkipLogReplay: true}); err == nil {
		t.Fatal("SkipLogReplay on a read-write open accepted")
	}
	s = openTest(t, c, Options{ReadOnly: true, SkipLogReplay: true})
	if _, err := s.Lookup(RootIno, "f"); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("lookup of the logged file without the log: %v", err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if imageHash(t, c) != before {
		t.Fatal("the read-only open without the log changed the device")
	}
	s = openTest(t, c, Options{})
	if !s.Replay().Applied {
		t.Fatalf("replay: %+v", s.Replay())
	}
	closeCheck(t, s)
	s = openTest(t, c, Options{ReadOnly: true})
	if got, err := s.Get("/f"); err != nil || string(got) != "fsynced" {
		t.Fatalf("read-only get after the replay: %q %v", got, err)
	}
	if err := s.Check(); err != nil {
		t.Fatalf("fsck of an intact store mounted read-only: %v", err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
