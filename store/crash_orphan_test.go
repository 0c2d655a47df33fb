package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"ustore/dev/memdev"
	"ustore/engine"
)

// TestCrash_UnlinkWhileOpen: files unlinked (and renamed over) while open,
// written and fsynced as orphans, then released, with a power cut at every
// flush and after every write. After each cut the mount must free every
// orphan — no orphan item left, no data extent of an inode without a name
// (leaked space), fsck clean — and every file with a name must read whole
// and be one the workload could have left: /A gone once the fsync of its
// orphan returned (that fsync commits the unlink), /B replaced by /D/C's
// data once the sync after the rename returned.
func TestCrash_UnlinkWhileOpen(t *testing.T) {
	ctx := context.Background()
	base, m0 := crashBase(t)
	inoA, _ := m0.lookup("/A")
	inoB, _ := m0.lookup("/B")
	inoC, _ := m0.lookup("/D/C")
	dataC := m0[inoC].data

	d := base.Crash(memdev.KeepNone())
	s, err := Open(d, crashOptions())
	if err != nil {
		t.Fatal(err)
	}
	start := d.Seq()
	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	_, err = s.Open(inoA)
	step("open /A", err)
	step("unlink /A", s.Unlink(RootIno, "A"))
	_, err = s.Write(inoA, 20000, crashData(50, 20000, 9000))
	step("write the orphan /A", err)
	step("fsync the orphan /A", s.Fsync(ctx, inoA, false))
	unlinkDurable := d.Seq()
	_, err = s.Open(inoB)
	step("open /B", err)
	step("rename /D/C over /B", s.Rename(mustDir(t, s, "/D"), "C", RootIno, "B"))
	_, err = s.Write(inoB, 0, crashData(51, 0, 7000))
	step("write the orphan /B", err)
	step("sync", s.Sync(ctx))
	renameDurable := d.Seq()
	step("release /A", s.Release(inoA))
	step("fsync /B's orphan", s.Fsync(ctx, inoB, true))
	step("release /B", s.Release(inoB))
	step("sync", s.Sync(ctx))
	end := d.Seq()
	step("close", s.Close(ctx))

	r := &crashRun{d: d, start: start, end: end}
	pts := r.crashPoints(rand.New(rand.NewPCG(48, 5)))
	for _, p := range pts {
		if err := crashMountCheck(d.CrashAt(p.seq, p.policy(d)), func(_ *Store, disk *crashDisk) error {
			gotA := disk.ents[crashEntry{RootIno, "A"}]
			gotB := disk.ents[crashEntry{RootIno, "B"}]
			if p.seq >= unlinkDurable && gotA != 0 {
				return fmt.Errorf("/A names %d after the fsync of its orphan returned", gotA)
			}
			if p.seq >= renameDurable && (gotB != inoC || string(disk.files[inoC]) != string(dataC)) {
				return fmt.Errorf("/B names %d after the sync of the rename returned, want %d with /D/C's data", gotB, inoC)
			}
			return nil
		}); err != nil {
			t.Fatalf("crash at %v (unlink durable at %d, rename at %d): %v", p, unlinkDurable, renameDurable, err)
		}
	}
	t.Logf("%d crash points", len(pts))
}

func mustDir(t *testing.T, s *Store, p string) Ino {
	t.Helper()
	a, err := s.Resolve(p)
	if err != nil {
		t.Fatal(err)
	}
	return a.Ino
}

// crashMountCheck mounts what a crash left and checks that it passes
// fsck and holds no orphan and no data of an inode without a name, then
// applies want to the store and what the walk from the root found, and
// last the checks every crash point ends with (crashAfter).
func crashMountCheck(crashed *memdev.Device, want func(*Store, *crashDisk) error) error {
	s, err := Open(crashed, crashOptions())
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer s.Close(context.Background())
	if err := s.Check(); err != nil {
		return fmt.Errorf("fsck: %w", err)
	}
	if inos, err := s.orphans(); err != nil || len(inos) != 0 {
		return fmt.Errorf("orphan items after mount: %v, %v", inos, err)
	}
	disk, err := crashWalk(s)
	if err != nil {
		return err
	}
	if err := crashNoLeak(s, disk); err != nil {
		return err
	}
	if err := want(s, disk); err != nil {
		return err
	}
	return crashAfter(s, disk)
}

// crashNoLeak checks that every inode holding a data extent is one the
// walk from the root reached: no space stays with an inode no name leads
// to.
func crashNoLeak(s *Store, disk *crashDisk) error {
	var leak error
	err := s.fs.Iterate(engine.MinKey, func(k engine.Key, _ []byte) bool {
		if k.Type != engine.TypeExtentData {
			return true
		}
		if _, ok := disk.files[k.Ino()]; !ok {
			leak = fmt.Errorf("inode %d holds an extent at %d but no name leads to it", k.Ino(), k.Offset)
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	return leak
}
