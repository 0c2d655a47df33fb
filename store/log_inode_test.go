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
	dir := uint64(RootIno)
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
