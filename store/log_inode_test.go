package store

import (
	"context"
	"fmt"
	"runtime/debug"
	"testing"
	"time"
)

// TestLog_DeepNewDirs: an fsync logs the names of its inode and of every
// parent created in the same transaction, up to a committed directory
// (logNames). One transaction may create a chain of directories as deep as
// it likes, so the walk up must not recurse: with the goroutine stack
// capped at 1 MiB for the fsync, a recursion over 10,000 new directories
// (a few hundred bytes of stack each) dies with "goroutine stack exceeds
// limit"; the work list does not. After a power cut the log's replay
// brings the whole chain back.
func TestLog_DeepNewDirs(t *testing.T) {
	const depth = 10_000
	d := newTestDevice(t, 256<<20)
	s := openTest(t, d, Options{CommitInterval: 5 * time.Minute})
	ctx := context.Background()
	commitsBefore := s.Engine().Stats().Commits
	dir := RootIno
	for i := range depth {
		a, err := s.Mkdir(dir, fmt.Sprintf("d%d", i), 0o755)
		if err != nil {
			t.Fatalf("mkdir %d: %v", i, err)
		}
		dir = a.Ino
	}
	f, err := s.Create(dir, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(f.Ino, 0, []byte("deep")); err != nil {
		t.Fatal(err)
	}
	old := debug.SetMaxStack(1 << 20)
	err = s.Fsync(ctx, f.Ino, false)
	debug.SetMaxStack(old)
	if err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.FsyncLogged != 1 || s.Engine().Stats().Commits != commitsBefore {
		t.Fatalf("fsync: %d logged, %d commits since the first mkdir (fallbacks %v): the chain was not all new to the log",
			st.FsyncLogged, s.Engine().Stats().Commits-commitsBefore, st.FsyncFallbacks)
	}
	s2, _ := crashReopen(t, d)
	defer closeCheck(t, s2)
	dir = RootIno
	for i := range depth {
		a, err := s2.Lookup(dir, fmt.Sprintf("d%d", i))
		if err != nil {
			t.Fatalf("after replay: d%d at depth %d: %v", i, i, err)
		}
		dir = a.Ino
	}
	a, err := s2.Lookup(dir, "f")
	if err != nil {
		t.Fatalf("after replay: the deepest file: %v", err)
	}
	buf := make([]byte, 16)
	if n, err := s2.Read(a.Ino, 0, buf); err != nil || string(buf[:n]) != "deep" {
		t.Fatalf("after replay: read %q, %v", buf[:n], err)
	}
}

// TestLog_FsyncFollowsChange: the items an fsync logs follow what changed
// since the inode was last logged, not the file's size (the 2011 btrfs
// patch that stopped logging the checksums of unchanged extents): a
// one-block overwrite of a file of 256 extents (16 MiB) logs as many items
// — the inode, its name, how it was logged, one range record, one extent
// and its checksums — as the same overwrite of a file of one extent. A
// file's changed ranges come from logTrack; logging the whole file
// instead would copy every extent and its checksums (more than 500 items
// here).
func TestLog_FsyncFollowsChange(t *testing.T) {
	const piece = 64 << 10
	ctx := context.Background()
	logged := func(pieces int) uint64 {
		d := newTestDevice(t, 64<<20)
		s := openTest(t, d, Options{CommitInterval: 5 * time.Minute})
		defer closeCheck(t, s)
		f, err := s.Create(RootIno, "f", 0o644)
		if err != nil {
			t.Fatal(err)
		}
		// One extent per piece: each is written back by its own commit.
		for i := range pieces {
			if _, err := s.Write(f.Ino, uint64(i*piece), patternData(byte(i+1), piece)); err != nil {
				t.Fatal(err)
			}
			if err := s.Sync(ctx); err != nil {
				t.Fatal(err)
			}
		}
		before, _ := s.LogStats()
		if _, err := s.Write(f.Ino, uint64(pieces/2*piece), patternData(0, blockSize)); err != nil {
			t.Fatal(err)
		}
		if err := s.Fsync(ctx, f.Ino, false); err != nil {
			t.Fatal(err)
		}
		after, _ := s.LogStats()
		if st := s.Stats(); st.FsyncLogged != 1 {
			t.Fatalf("%d pieces: the fsync was not logged (fallbacks %v)", pieces, st.FsyncFallbacks)
		}
		items := after.Inserted + after.InPlace - before.Inserted - before.InPlace
		t.Logf("a 1-block overwrite of a file of %d extents (%d KiB): %d items logged", pieces, pieces*piece>>10, items)
		return items
	}
	small, large := logged(1), logged(256)
	if large != small || large > 8 {
		t.Fatalf("a 1-block overwrite logged %d items in a file of 256 extents, %d in a file of one: want the same few", large, small)
	}
}
