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

// noWaitDeclines checks that op declines — ErrWouldWait, at once, with
// lock held by this goroutine (nil: none), so that a wait would never end
// — without a device read, leaving the next inode number, dir and name as
// they were.
func noWaitDeclines(t *testing.T, s *Store, cd *countingDev, dir Ino, what, name string, op func() error, lock sync.Locker) {
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

// noWaitFixture opens a store on a counting device with a directory /d,
// and returns them with declines: noWaitDeclines in /d.
func noWaitFixture(t *testing.T) (s *Store, cd *countingDev, dir Ino,
	declines func(what, name string, op func() error, lock sync.Locker)) {
	t.Helper()
	cd = &countingDev{Device: newTestDevice(t, 64<<20)}
	s = openTest(t, cd, quiet(Options{}))
	d, err := s.Mkdir(RootIno, "d", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	declines = func(what, name string, op func() error, lock sync.Locker) {
		t.Helper()
		noWaitDeclines(t, s, cd, d.Ino, what, name, op, lock)
	}
	return s, cd, d.Ino, declines
}

// freezeCommit opens a transaction handle and starts a commit behind it,
// and returns once the running transaction is frozen for that commit
// (engine.TryStartReserved would wait); thaw ends the handle and waits for
// the commit.
func freezeCommit(t *testing.T, s *Store) (thaw func()) {
	t.Helper()
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
	return func() {
		t.Helper()
		tr.End()
		if err := <-committed; err != nil {
			t.Fatal(err)
		}
	}
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
	s, cd, dir, declines := noWaitFixture(t)
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
	thaw := freezeCommit(t, s)
	declines("create, the commit frozen", "b", create("b"), nil)
	thaw()

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

// TestStore_RenameNoWait: RenameNoWait makes the common rename — a file or
// a symlink to a name that does not exist, in one directory or to another,
// with or without RenameNoReplace — as Rename does (the name moves, the
// inode keeps its number and link count, the store checks clean), and
// declines, changing nothing and reading nothing, where Rename would wait
// or has more to do: a lock held (renameMu for a rename to another
// directory — one within a directory takes none —, either directory's mu,
// the source's), a directory or the source not in memory, the commit
// frozen with a handle open, the new name taken, the source a directory
// or missing, RENAME_EXCHANGE.
func TestStore_RenameNoWait(t *testing.T) {
	cd := &countingDev{Device: newTestDevice(t, 64<<20)}
	s := openTest(t, cd, quiet(Options{}))
	var dirs [2]Ino
	for i, name := range []string{"d", "o"} {
		a, err := s.Mkdir(RootIno, name, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		dirs[i] = a.Ino
	}
	dir, other := dirs[0], dirs[1]
	// names is what a declined rename must leave: whether each name
	// exists, the inode it names, and both directories' attributes.
	type names struct {
		src, dst     Ino
		sdir, ddir   Attr
		reads, nextI int64
	}
	snapshot := func(sd Ino, src string, dd Ino, dst string) names {
		t.Helper()
		reads := cd.reads.Load()
		var n names
		if a, err := s.Lookup(sd, src); err == nil {
			n.src = a.Ino
		}
		if a, err := s.Lookup(dd, dst); err == nil {
			n.dst = a.Ino
		}
		var err error
		if n.sdir, err = s.Stat(sd); err != nil {
			t.Fatal(err)
		}
		if n.ddir, err = s.Stat(dd); err != nil {
			t.Fatal(err)
		}
		n.reads, n.nextI = reads, int64(s.nextIno.v.Load())
		return n
	}
	declines := func(what string, sd Ino, src string, dd Ino, dst string, flags uint32, lock sync.Locker) {
		t.Helper()
		before := snapshot(sd, src, dd, dst)
		reads := cd.reads.Load()
		if lock != nil {
			lock.Lock()
		}
		err := s.RenameNoWait(sd, src, dd, dst, flags)
		if lock != nil {
			lock.Unlock()
		}
		if !errors.Is(err, ErrWouldWait) {
			t.Fatalf("%s: %v, want ErrWouldWait", what, err)
		}
		if cd.reads.Load() != reads {
			t.Fatalf("%s: read the device", what)
		}
		after := snapshot(sd, src, dd, dst)
		after.reads = before.reads
		if after != before {
			t.Fatalf("%s: changed the store: %+v, then %+v", what, before, after)
		}
	}
	renamed := func(what string, sd Ino, src string, dd Ino, dst string, flags uint32) {
		t.Helper()
		before, err := s.Lookup(sd, src)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.RenameNoWait(sd, src, dd, dst, flags); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if _, err := s.Lookup(sd, src); !errors.Is(err, syscall.ENOENT) {
			t.Fatalf("%s: the old name: %v", what, err)
		}
		a, err := s.Lookup(dd, dst)
		if err != nil || a.Ino != before.Ino || a.Nlink != before.Nlink || !a.Ctime.After(before.Ctime) && !a.Ctime.Equal(before.Ctime) {
			t.Fatalf("%s: the new name: %+v %v (was %+v)", what, a, err, before)
		}
	}

	mustCreate(t, s, dir, "a", nil)
	renamed("in the directory", dir, "a", dir, "b", 0)
	renamed("with RenameNoReplace", dir, "b", dir, "c", RenameNoReplace)
	renamed("to another directory", dir, "c", other, "c", 0)
	renamed("back", other, "c", dir, "a", 0)
	if _, err := s.Symlink(dir, "l", "a"); err != nil {
		t.Fatal(err)
	}
	renamed("a symlink", dir, "l", dir, "l2", 0)
	mustCreate(t, s, dir, "full", []byte("data"))
	renamed("a file with buffered data", dir, "full", dir, "full2", 0)
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Read(mustLookup(t, s, dir, "full2"), 0, make([]byte, 8)); err != nil || got != 4 {
		t.Fatalf("the renamed file's data: %d bytes, %v", got, err)
	}

	// What the worker's Rename answers or has more to do for.
	declines("over an existing name", dir, "a", dir, "l2", 0, nil)
	declines("over an existing name, RenameNoReplace", dir, "a", dir, "l2", RenameNoReplace, nil)
	declines("onto itself", dir, "a", dir, "a", 0, nil)
	declines("a missing source", dir, "missing", dir, "x", 0, nil)
	declines("RENAME_EXCHANGE", dir, "a", dir, "l2", RenameExchange, nil)
	if _, err := s.Mkdir(dir, "sub", 0o755); err != nil {
		t.Fatal(err)
	}
	declines("a directory", dir, "sub", dir, "sub2", 0, nil)
	declines("a bad name", dir, "a", dir, "x/y", 0, nil)

	// Locks held.
	declines("renameMu held, to another directory", dir, "a", other, "x", 0, &s.renameMu)
	declines("renameMu read-held (an fsync logging), to another directory", dir, "a", other, "x", 0,
		s.renameMu.RLocker())
	// Within one directory a file's rename takes no renameMu.
	s.renameMu.Lock()
	err := s.RenameNoWait(dir, "a", dir, "a9", 0)
	s.renameMu.Unlock()
	if err != nil {
		t.Fatalf("a rename within the directory, renameMu held: %v", err)
	}
	renamed("back", dir, "a9", dir, "a", 0)
	declines("the directory's mu held", dir, "a", dir, "x", 0, &s.itab.peek(dir).mu)
	declines("the target directory's mu held", dir, "a", other, "x", 0, &s.itab.peek(other).mu)
	a, err := s.Lookup(dir, "a")
	if err != nil {
		t.Fatal(err)
	}
	declines("the source's mu held", dir, "a", dir, "x", 0, &s.itab.peek(a.Ino).mu)

	// Not in memory: the source, then the directory.
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	evictInodes(s)
	for _, d := range []Ino{dir, other} {
		if _, err := s.Stat(d); err != nil { // loads the directories, not their files
			t.Fatal(err)
		}
	}
	if s.itab.peek(a.Ino) != nil {
		t.Fatal("the source was not evicted")
	}
	// (Not declines: its lookups would load the source.)
	reads := cd.reads.Load()
	if err := s.RenameNoWait(dir, "a", dir, "x", 0); !errors.Is(err, ErrWouldWait) || cd.reads.Load() != reads ||
		s.itab.peek(a.Ino) != nil {
		t.Fatalf("rename of a source not in memory: %v, %d device reads, loaded %v", err, cd.reads.Load()-reads,
			s.itab.peek(a.Ino) != nil)
	}
	if _, err := s.Lookup(dir, "x"); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("the declined rename made the new name: %v", err)
	}
	if _, err := s.Stat(a.Ino); err != nil {
		t.Fatal(err)
	}
	evictInodes(s)
	if _, err := s.Stat(a.Ino); err != nil {
		t.Fatal(err)
	}
	if s.itab.peek(dir) != nil {
		t.Fatal("the directory was not evicted")
	}
	reads = cd.reads.Load()
	if err := s.RenameNoWait(dir, "a", dir, "x", 0); !errors.Is(err, ErrWouldWait) || cd.reads.Load() != reads ||
		s.itab.peek(dir) != nil {
		t.Fatalf("rename in a directory not in memory: %v, %d device reads, loaded %v", err, cd.reads.Load()-reads,
			s.itab.peek(dir) != nil)
	}
	if _, err := s.Stat(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(other); err != nil {
		t.Fatal(err)
	}

	// The running transaction frozen for its commit, a handle still open.
	thaw := freezeCommit(t, s)
	declines("the commit frozen", dir, "a", dir, "x", 0, nil)
	thaw()

	// Nothing in the way again: made, and the store checks clean.
	renamed("after all that", dir, "a", other, "x", 0)
	closeCheck(t, s)
}

func mustLookup(t *testing.T, s *Store, dir Ino, name string) Ino {
	t.Helper()
	a, err := s.Lookup(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return a.Ino
}

// TestStore_MkdirRmdirNoWait: MkdirNoWait and RmdirNoWait make a mkdir and
// an rmdir as Mkdir and Rmdir do (the parent's link count and size follow,
// EEXIST and ENOTEMPTY are their answers), and decline — changing nothing,
// reading nothing — with the parent's or the victim's lock held, the
// victim not in memory, the commit frozen, a victim that is not a
// directory.
func TestStore_MkdirRmdirNoWait(t *testing.T) {
	s, cd, dir, declines := noWaitFixture(t)
	mkdir := func(name string) func() error {
		return func() error { _, err := s.MkdirNoWait(dir, name, 0o755); return err }
	}
	rmdir := func(name string) func() error { return func() error { return s.RmdirNoWait(dir, name) } }

	// Made, and answered as Mkdir and Rmdir answer.
	a, err := s.MkdirNoWait(dir, "s", 0o750)
	if err != nil || a.Mode != ModeDir|0o750 || a.Nlink != 2 {
		t.Fatalf("mkdir: %+v %v", a, err)
	}
	if st, err := s.Stat(dir); err != nil || st.Nlink != 3 {
		t.Fatalf("the parent after the mkdir: %+v %v, want 3 links", st, err)
	}
	if _, err := s.MkdirNoWait(dir, "s", 0o755); !errors.Is(err, syscall.EEXIST) {
		t.Fatalf("mkdir over a name: %v, want EEXIST", err)
	}
	mustCreate(t, s, a.Ino, "f", nil)
	if err := s.RmdirNoWait(dir, "s"); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Fatalf("rmdir of a directory with a file: %v, want ENOTEMPTY", err)
	}
	if err := s.Unlink(a.Ino, "f"); err != nil {
		t.Fatal(err)
	}
	if err := s.RmdirNoWait(dir, "s"); err != nil {
		t.Fatal(err)
	}
	if st, err := s.Stat(dir); err != nil || st.Nlink != 2 || st.Size != 0 {
		t.Fatalf("the parent after the rmdir: %+v %v, want 2 links and size 0", st, err)
	}

	// Locks held; a victim that is not a directory.
	declines("mkdir, the parent's lock held", "m", mkdir("m"), &s.itab.peek(dir).mu)
	v, err := s.Mkdir(dir, "v", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	declines("rmdir, the parent's lock held", "v", rmdir("v"), &s.itab.peek(dir).mu)
	declines("rmdir, the victim's mu held", "v", rmdir("v"), &s.itab.peek(v.Ino).mu)
	mustCreate(t, s, dir, "file", nil)
	declines("rmdir of a file", "file", rmdir("file"), nil)
	declines("rmdir of a missing name", "missing", rmdir("missing"), nil)

	// The victim not in memory.
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	evictInodes(s)
	if _, err := s.Stat(dir); err != nil {
		t.Fatal(err)
	}
	if s.itab.peek(v.Ino) != nil {
		t.Fatal("the victim was not evicted")
	}
	reads := cd.reads.Load()
	if err := s.RmdirNoWait(dir, "v"); !errors.Is(err, ErrWouldWait) || s.itab.peek(v.Ino) != nil || cd.reads.Load() != reads {
		t.Fatalf("rmdir of a victim not in memory: %v, loaded %v", err, s.itab.peek(v.Ino) != nil)
	}

	// The running transaction frozen for its commit, a handle still open.
	if _, err := s.Stat(v.Ino); err != nil {
		t.Fatal(err)
	}
	thaw := freezeCommit(t, s)
	declines("mkdir, the commit frozen", "m", mkdir("m"), nil)
	declines("rmdir, the commit frozen", "v", rmdir("v"), nil)
	thaw()

	// Nothing in the way: made.
	if _, err := s.MkdirNoWait(dir, "m", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"m", "v"} {
		if err := s.RmdirNoWait(dir, name); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Unlink(dir, "file"); err != nil {
		t.Fatal(err)
	}
	closeCheck(t, s)
}
