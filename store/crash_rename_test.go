package store

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"ustore/dev/memdev"
)

// TestCrash_ReplaceByRename: the replace-by-rename idiom without an fsync —
// write a new file, rename it over an existing one — followed by a commit
// that is not a sync (the periodic commit, which writes back no data). A
// power cut anywhere must leave the old file whole or the new one whole:
// never an empty or short file, which is what a commit holding the rename
// but not the data would leave (ext4's auto_da_alloc case). rename.go's
// writeBackReplacing is what makes it hold; POSIX does not ask for it.
func TestCrash_ReplaceByRename(t *testing.T) {
	ctx := context.Background()
	base, m0 := crashBase(t)
	oldB := m0[m0.entry(RootIno, "B")].data

	for _, size := range []int{300, 5000, 3*blockSize + 17} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			newB := crashData(7, 0, size)
			d := base.Crash(memdev.KeepNone())
			s, err := Open(d, crashOptions())
			if err != nil {
				t.Fatal(err)
			}
			start := d.Seq()
			a, err := s.Create(RootIno, "B.tmp", 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Write(a.Ino, 0, newB); err != nil {
				t.Fatal(err)
			}
			before := s.Stats().RenameWritebacks
			if err := s.Rename(RootIno, "B.tmp", RootIno, "B"); err != nil {
				t.Fatal(err)
			}
			if got := s.Stats().RenameWritebacks - before; got != 1 {
				t.Fatalf("rename over B wrote back %d times, want once", got)
			}
			// The periodic commit: no writeback of its own.
			if _, err := s.e.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			committed := d.Seq()
			if err := s.Close(ctx); err != nil {
				t.Fatal(err)
			}

			r := &crashRun{d: d, start: start, end: committed}
			pts := r.crashPoints(rand.New(rand.NewPCG(uint64(size), 3)))
			for _, p := range pts {
				got, err := crashReadB(d.CrashAt(p.seq, p.policy(d)))
				if err != nil {
					t.Fatalf("%v: %v", p, err)
				}
				switch {
				case bytes.Equal(got, newB):
				case bytes.Equal(got, oldB) && p.seq < committed:
				default:
					t.Fatalf("%v (commit durable at seq %d): /B holds %d bytes, neither the old %d nor the new %d",
						p, committed, len(got), len(oldB), len(newB))
				}
			}
			t.Logf("%d crash points", len(pts))
		})
	}
}

// TestRename_WritesBackOnlyWhenReplacing: a rename to a free name is a
// namespace operation alone; only a rename over an existing file writes the
// source's buffered data back.
func TestRename_WritesBackOnlyWhenReplacing(t *testing.T) {
	s := openTest(t, newTestDevice(t, 16<<20), crashOptions())
	defer closeCheck(t, s)
	mustCreate(t, s, RootIno, "a", []byte("buffered"))
	if err := s.Rename(RootIno, "a", RootIno, "b"); err != nil {
		t.Fatal(err)
	}
	if n := s.Stats().RenameWritebacks; n != 0 {
		t.Fatalf("rename to a free name wrote back (%d)", n)
	}
	mustCreate(t, s, RootIno, "c", nil)
	if err := s.Rename(RootIno, "b", RootIno, "c"); err != nil {
		t.Fatal(err)
	}
	if n := s.Stats().RenameWritebacks; n != 1 {
		t.Fatalf("rename over c: %d writebacks, want 1", n)
	}
	if st := s.Stats(); st.DirtyBytes != 0 {
		t.Fatalf("%d dirty bytes left after the rename over c", st.DirtyBytes)
	}
}

// crashReadB mounts a crashed device, checks it, and reads /B.
func crashReadB(d *memdev.Device) ([]byte, error) {
	s, err := Open(d, crashOptions())
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	defer s.Close(context.Background())
	if err := s.Check(); err != nil {
		return nil, fmt.Errorf("fsck: %w", err)
	}
	a, err := s.Lookup(RootIno, "B")
	if err != nil {
		return nil, err
	}
	buf := make([]byte, a.Size+1)
	n, err := s.Read(a.Ino, 0, buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}
