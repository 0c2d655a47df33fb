package store

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"syscall"
	"testing"

	"ustore/journal"
)

// noWaitState is what a declined NoWait call must leave as it was: the
// next inode number, the directory's attributes, whether the name exists,
// and the device's reads.
type noWaitState struct {
	next  Ino
	dir   Attr
	found bool
	reads int64
}

func noWaitSnapshot(t *testing.T, s *Store, cd *countingDev, dir Ino, name string) noWaitState {
	t.Helper()
	reads := cd.reads.Load()
	a, err := s.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Lookup(dir, name)
	if err != nil && !errors.Is(err, syscall.ENOENT) {
		t.Fatal(err)
	}
	// The stat and the lookup above may have read the device themselves.
	return noWaitState{next: Ino(s.nextIno.v.Load()), dir: a, found: err == nil, reads: reads}
}

// TestStore_NoWait_DeclinesWithoutSideEffects: CreateNoWait and
// UnlinkNoWait decline — ErrWouldWait, at once, on the caller's goroutine
// — where Create and Unlink would wait: the directory's or the victim's
// lock held (by this goroutine: a wait would never end), the directory or
// the victim not in memory, the running transaction frozen for a commit
// with a handle open, a victim with data; and each declined call leaves
// the store as it was (no inode number taken, the directory unchanged,
// the name as it was, no device read). Where nothing is in the way they
// make the operation, as Create and Unlink do, and give the same errors
// (EEXIST, ENOENT): the store checks clean.
func TestStore_NoWait_DeclinesWithoutSideEffects(t *testing.T) {
	cd := &countingDev{Device: newTestDevice(t, 64<<20)}
	s := openTest(t, cd, quiet(Options{}))
	d, err := s.Mkdir(RootIno, "d", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	dir := d.Ino
	// declines checks that op declines with the lock held (nil: none).
	declines := func(what, name string, op func() error, lock sync.Locker) {
		t.Helper()
		before := noWaitSnapshot(t, s, cd, dir, name)
		reads := cd.reads.Load()
		if lock != nil {
			lock.Lock()
		}
		err := op()
		if lock != nil {
			lock.Unlock()
		}
		if !errors.Is(err, ErrWouldWait) {
			t.Fatalf("%s: %v, want ErrWouldWait", what, err)
		}
		if cd.reads.Load() != reads {
			t.Fatalf("%s: read the device", what)
		}
		if after := noWaitSnapshot(t, s, cd, dir, name); after.next != before.next || after.dir != before.dir ||
			after.found != before.found {
			t.Fatalf("%s: changed the store: %+v, then %+v", what, before, after)
		}
	}
	create := func(name string) func() error {
		return func() error { _, err := s.CreateNoWait(dir, name, 0o644); return err }
	}
	unlink := func(name string) func() error { return func() error { return s.UnlinkNoWait(dir, name) } }

	// Made, and answered as Create and Unlink answer.
	if a, err := s.CreateNoWait(dir, "a", 0o640); err != nil || a.Mode != ModeFile|0o640 || a.Nlink != 1 {
		t.Fatalf("create: %+v %v", a, err)
	}
	if _, err := s.CreateNoWait(dir, "a", 0o644); !errors.Is(err, syscall.EEXIST) {
		t.Fatalf("create over a name: %v, want EEXIST", err)
	}
	if err := s.UnlinkNoWait(dir, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lookup(dir, "a"); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("after the unlink: %v", err)
	}

	// The directory's lock held.
	declines("create, the directory's lock held", "b", create("b"), &s.itab.peek(dir).mu)

	// The victim's locks held; the victim has data; it is a directory.
	mustCreate(t, s, dir, "e", nil)
	e, err := s.Lookup(dir, "e")
	if err != nil {
		t.Fatal(err)
	}
	victim := s.itab.peek(e.Ino)
	declines("unlink, the victim's wbMu held", "e", unlink("e"), &victim.wbMu)
	declines("unlink, the victim's mu held", "e", unlink("e"), &victim.mu)
	mustCreate(t, s, dir, "full", []byte("data"))
	declines("unlink of a file with data", "full", unlink("full"), nil)
	if _, err := s.Mkdir(dir, "sub", 0o755); err != nil {
		t.Fatal(err)
	}
	declines("unlink of a directory", "sub", unlink("sub"), nil)

	// Not in memory: the directory, then the victim.
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	evictInodes(s)
	if s.itab.peek(dir) != nil {
		t.Fatal("the directory was not evicted")
	}
	reads := cd.reads.Load()
	if _, err := s.CreateNoWait(dir, "b", 0o644); !errors.Is(err, ErrWouldWait) || cd.reads.Load() != reads ||
		s.itab.peek(dir) != nil {
		t.Fatalf("create in a directory not in memory: %v, %d device reads, loaded %v", err, cd.reads.Load()-reads,
			s.itab.peek(dir) != nil)
	}
	if _, err := s.Stat(dir); err != nil { // loads the directory, not its files
		t.Fatal(err)
	}
	evictInodes(s)
	if _, err := s.Stat(dir); err != nil {
		t.Fatal(err)
	}
	if s.itab.peek(e.Ino) != nil {
		t.Fatal("the victim was not evicted")
	}
	reads = cd.reads.Load()
	if err := s.UnlinkNoWait(dir, "e"); !errors.Is(err, ErrWouldWait) || s.itab.peek(e.Ino) != nil || cd.reads.Load() != reads {
		t.Fatalf("unlink of a victim not in memory: %v, loaded %v", err, s.itab.peek(e.Ino) != nil)
	}
	if _, err := s.Lookup(dir, "e"); err != nil {
		t.Fatalf("the victim not in memory after the declined unlink: %v", err)
	}

	// The running transaction frozen for its commit, a handle still open.
	tr, err := s.e.Start()
	if err != nil {
		t.Fatal(err)
	}
	committed := make(chan error, 1)
	go func() { _, err := s.e.Commit(context.Background()); committed <- err }()
	for {
		h, err := s.e.TryStartReserved(0)
		if errors.Is(err, journal.ErrWouldWait) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		h.End()
		runtime.Gosched()
	}
	declines("create, the commit frozen", "b", create("b"), nil)
	tr.End()
	if err := <-committed; err != nil {
		t.Fatal(err)
	}

	// Nothing in the way: made.
	if _, err := s.CreateNoWait(dir, "b", 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.UnlinkNoWait(dir, "e"); err != nil {
		t.Fatal(err)
	}
	if err := s.UnlinkNoWait(dir, "missing"); !errors.Is(err, ErrWouldWait) {
		t.Fatalf("unlink of a missing name: %v, want ErrWouldWait (Unlink gives ENOENT)", err)
	}
	for _, name := range []string{"b", "full"} {
		if err := s.Unlink(dir, name); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Rmdir(dir, "sub"); err != nil {
		t.Fatal(err)
	}
	closeCheck(t, s)
}
