package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"
	"time"
)

// holdDir takes directory dir's mu, so that the creates started next
// queue behind the first (their leader, waiting for the lock), and
// returns its release.
func holdDir(t *testing.T, s *Store, dir Ino) (release func()) {
	t.Helper()
	d, err := s.getDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	return func() {
		d.mu.Unlock()
		s.itab.put(d)
	}
}

// createQueued is how many creates dir's queue holds (its leader's
// among them, until its first pass takes it).
func createQueued(s *Store, dir Ino) int {
	sh := s.creates.shard(dir)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if q := sh.dirs[dir]; q != nil {
		return len(q.waiting)
	}
	return 0
}

// waitQueued waits until dir's queue holds n creates.
func waitQueued(t *testing.T, s *Store, dir Ino, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); createQueued(s, dir) < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d creates queued, want %d", createQueued(s, dir), n)
		}
		time.Sleep(time.Millisecond)
	}
}

type batchResult struct {
	name string
	a    Attr
	err  error
}

// createBatch creates names in dir concurrently, all in one pass of the
// queue: they are queued behind a held lock first.
func createBatch(t *testing.T, s *Store, dir Ino, names []string, mode uint32) []batchResult {
	t.Helper()
	if len(names) > createBatchMax {
		t.Fatalf("%d names: more than one pass", len(names))
	}
	release := holdDir(t, s, dir)
	res := make([]batchResult, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var a Attr
			var err error
			if mode&ModeType == ModeDir {
				a, err = s.Mkdir(dir, name, mode)
			} else {
				a, err = s.Create(dir, name, mode)
			}
			res[i] = batchResult{name, a, err}
		}()
		// One at a time, so that the queue's order is names' order.
		waitQueued(t, s, dir, i+1)
	}
	release()
	wg.Wait()
	return res
}

// TestCreateBatch_Create_AllSucceed: one pass of 64 creates in a
// directory gives each its own inode, consecutive numbers, every name
// visible, the directory's size, link count and times those 64 creates
// made, and a clean fsck after a remount.
func TestCreateBatch_Create_AllSucceed(t *testing.T) {
	d := newTestDevice(t, 32<<20)
	s := openTest(t, d, Options{})
	sub, err := s.Mkdir(RootIno, "d", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	before := s.Stats()
	var names []string
	for i := range createBatchMax {
		names = append(names, fmt.Sprintf("f%03d", i))
	}
	res := createBatch(t, s, sub.Ino, names[:createBatchMax/2], 0o640)
	res = append(res, createBatch(t, s, sub.Ino, names[createBatchMax/2:], ModeDir|0o750)...)
	var inos []Ino
	for i, r := range res {
		if r.err != nil {
			t.Fatalf("create %s: %v", r.name, r.err)
		}
		wantMode := uint32(ModeFile | 0o640)
		if i >= createBatchMax/2 {
			wantMode = ModeDir | 0o750
		}
		if r.a.Mode != wantMode {
			t.Fatalf("%s: mode %o, want %o", r.name, r.a.Mode, wantMode)
		}
		inos = append(inos, r.a.Ino)
	}
	for i := 1; i < len(inos); i++ {
		if i != createBatchMax/2 && inos[i] != inos[i-1]+1 {
			t.Fatalf("inode numbers of one pass not consecutive: %v", inos)
		}
	}
	if st := s.Stats(); st.CreateBatches-before.CreateBatches != 2 || st.CreatesBatched-before.CreatesBatched != uint64(len(names)) {
		t.Fatalf("%d batches of %d creates, want 2 of %d", st.CreateBatches-before.CreateBatches,
			st.CreatesBatched-before.CreatesBatched, len(names))
	}
	check := func(when string) {
		t.Helper()
		for i, r := range res {
			a, err := s.Lookup(sub.Ino, r.name)
			if err != nil || a.Ino != inos[i] {
				t.Fatalf("%s: lookup %s: %d, %v; want %d", when, r.name, a.Ino, err, inos[i])
			}
		}
		da, err := s.Stat(sub.Ino)
		if err != nil {
			t.Fatal(err)
		}
		if da.Size != uint64(len(names)) || da.Nlink != 2+createBatchMax/2 {
			t.Fatalf("%s: directory size %d nlink %d, want %d and %d", when, da.Size, da.Nlink, len(names), 2+createBatchMax/2)
		}
		last := res[len(res)-1].a.Ctime
		if da.Mtime != last || da.Ctime != last {
			t.Fatalf("%s: directory mtime %v ctime %v, want the last create's %v", when, da.Mtime, da.Ctime, last)
		}
	}
	check("after the creates")
	if err := syncCheck(s); err != nil {
		t.Fatal(err)
	}
	s = remount(t, s, d, Options{})
	check("after remount")
	closeCheck(t, s)
}

// TestCreateBatch_Create_OwnErrors: in one pass, each create gets its own
// answer — a name already there and a name made earlier in the pass are
// EEXIST, a name too long is refused before the queue — and the others
// succeed.
func TestCreateBatch_Create_OwnErrors(t *testing.T) {
	d := newTestDevice(t, 32<<20)
	s := openTest(t, d, Options{})
	if _, err := s.Create(RootIno, "old", 0o644); err != nil {
		t.Fatal(err)
	}
	names := []string{"a", "old", "b", "a", "c", "b", "b", "d"}
	want := []error{nil, syscall.EEXIST, nil, syscall.EEXIST, nil, syscall.EEXIST, syscall.EEXIST, nil}
	res := createBatch(t, s, RootIno, names, 0o644)
	seen := map[Ino]bool{}
	for i, r := range res {
		if want[i] == nil {
			if r.err != nil {
				t.Fatalf("create #%d %s: %v", i, r.name, r.err)
			}
			if seen[r.a.Ino] {
				t.Fatalf("create #%d %s: inode %d given twice", i, r.name, r.a.Ino)
			}
			seen[r.a.Ino] = true
			continue
		}
		if !errors.Is(r.err, want[i]) {
			t.Fatalf("create #%d %s: %v, want %v", i, r.name, r.err, want[i])
		}
	}
	// The refused creates left no gap: the next inode follows.
	a, err := s.Create(RootIno, "e", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if !seen[a.Ino-1] {
		t.Fatalf("next inode %d: a refused create of the pass kept a number (%v)", a.Ino, seen)
	}
	da, _ := s.Stat(RootIno)
	if da.Size != 6 {
		t.Fatalf("root size %d, want 6", da.Size)
	}
	s = remount(t, s, d, Options{})
	closeCheck(t, s)
}

// TestCreateBatch_NoRoomForTheBatch: a device with room for only some of
// one pass's creates — its data buffered, the space promised to it — gives
// the rest ENOSPC, makes the first ones whole, and stays consistent: the
// buffered data is still written back, and fsck passes after a remount.
func TestCreateBatch_NoRoomForTheBatch(t *testing.T) {
	const size = 32 << 20
	d := newTestDevice(t, size)
	opts := Options{DirtyBytes: 128 << 20, DirtyExpire: 1 << 40}
	s := openTest(t, d, opts)
	m := newFileModel()
	names := fill(t, s, m, "f", 8<<20, 1<<20)
	// Give back the promised room of enough buffered pages for opMeta and
	// a few creates more: truncate the last file's tail.
	slack := func() int64 { return int64(s.e.Space().Available) - s.wb.reservedBytes() }
	last := names[len(names)-1]
	for slack() < int64(s.opMeta)+6*int64(s.e.NodeSize()) {
		sz := len(m.datas[last])
		if sz < 4096 {
			t.Fatalf("no buffered page left to give back (slack %d)", slack())
		}
		if err := s.Truncate(m.inos[last], uint64(sz-4096)); err != nil {
			t.Fatal(err)
		}
		m.datas[last] = m.datas[last][:sz-4096]
	}
	// Long names, so that the pass fills leaves and allocates nodes.
	cnames := make([]string, createBatchMax)
	for i := range cnames {
		cnames[i] = fmt.Sprintf("c%03d-%0200d", i, i)
	}
	res := createBatch(t, s, RootIno, cnames, 0o644)
	made, refused := 0, 0
	for i, r := range res {
		switch {
		case r.err == nil:
			if refused > 0 {
				t.Fatalf("create #%d made after an ENOSPC", i)
			}
			made++
			m.inos[r.name], m.datas[r.name] = r.a.Ino, nil
		case errors.Is(r.err, syscall.ENOSPC):
			refused++
			if _, err := s.Lookup(RootIno, r.name); !errors.Is(err, syscall.ENOENT) {
				t.Fatalf("refused %s: lookup %v, want ENOENT", r.name, err)
			}
		default:
			t.Fatalf("create #%d: %v", i, r.err)
		}
	}
	t.Logf("%d of %d creates made, %d refused", made, len(cnames), refused)
	if made == 0 || refused == 0 {
		t.Fatalf("%d made, %d refused: want some of each", made, refused)
	}
	if err := syncCheck(s); err != nil {
		t.Fatal(err)
	}
	syncRemountVerify(t, s, d, opts, m)
}

// TestCreateBatch_Concurrent_Model: many goroutines create, unlink and
// re-create names in a few directories, each on names of its own (its
// answers must be its model's) and on names all of them race for (exactly
// one create of each wins); the directories then hold the models' names
// with the inodes the creates returned, and fsck passes after a remount.
// Run it with -race.
func TestCreateBatch_Concurrent_Model(t *testing.T) {
	const (
		workers = 16
		dirs    = 3
		ops     = 150
		shared  = 24
	)
	d := newTestDevice(t, 64<<20)
	s := openTest(t, d, Options{})
	var dinos []Ino
	for i := range dirs {
		a, err := s.Mkdir(RootIno, fmt.Sprintf("d%d", i), 0o755)
		if err != nil {
			t.Fatal(err)
		}
		dinos = append(dinos, a.Ino)
	}
	type key struct {
		dir  Ino
		name string
	}
	models := make([]map[key]Ino, workers)
	won := make([]map[key]Ino, workers)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 15))
			model, mine := map[key]Ino{}, map[key]Ino{}
			models[w], won[w] = model, mine
			for i := range ops {
				dir := dinos[rng.IntN(dirs)]
				if rng.IntN(4) == 0 {
					k := key{dir, fmt.Sprintf("s%02d", rng.IntN(shared))}
					a, err := s.Create(k.dir, k.name, 0o644)
					if err == nil {
						mine[k] = a.Ino
					} else if !errors.Is(err, syscall.EEXIST) {
						errs <- fmt.Errorf("worker %d op %d: create %v: %w", w, i, k, err)
						return
					}
					continue
				}
				k := key{dir, fmt.Sprintf("w%02d-%d", w, rng.IntN(6))}
				if _, ok := model[k]; ok && rng.IntN(2) == 0 {
					if err := s.Unlink(k.dir, k.name); err != nil {
						errs <- fmt.Errorf("worker %d op %d: unlink %v: %w", w, i, k, err)
						return
					}
					delete(model, k)
					continue
				}
				a, err := s.Create(k.dir, k.name, 0o600)
				_, exists := model[k]
				switch {
				case exists && !errors.Is(err, syscall.EEXIST):
					errs <- fmt.Errorf("worker %d op %d: create %v over a name: %v", w, i, k, err)
					return
				case !exists && err != nil:
					errs <- fmt.Errorf("worker %d op %d: create %v: %w", w, i, k, err)
					return
				case !exists:
					model[k] = a.Ino
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want := map[key]Ino{}
	inos := map[Ino]key{}
	for w := range workers {
		for _, m := range []map[key]Ino{models[w], won[w]} {
			for k, ino := range m {
				if _, dup := want[k]; dup {
					t.Fatalf("%v created by two workers", k)
				}
				if other, dup := inos[ino]; dup {
					t.Fatalf("inode %d given to %v and %v", ino, k, other)
				}
				want[k], inos[ino] = ino, k
			}
		}
	}
	st := s.Stats()
	t.Logf("%d names; %d batches of %d creates", len(want), st.CreateBatches, st.CreatesBatched)
	verify := func(when string) {
		t.Helper()
		got := map[key]Ino{}
		for _, dir := range dinos {
			ents, err := s.ReadDir(dir, 0, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				got[key{dir, e.Name}] = e.Ino
			}
			if a, _ := s.Stat(dir); a.Size != uint64(len(ents)) {
				t.Fatalf("%s: directory %d size %d, %d entries", when, dir, a.Size, len(ents))
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d names, want %d", when, len(got), len(want))
		}
		for k, ino := range want {
			if got[k] != ino {
				t.Fatalf("%s: %v is inode %d, want %d", when, k, got[k], ino)
			}
		}
	}
	verify("after the run")
	if err := syncCheck(s); err != nil {
		t.Fatal(err)
	}
	s = remount(t, s, d, Options{})
	verify("after remount")
	closeCheck(t, s)
}

// TestCreateBatch_NoWait_DeclinesWhileQueued: CreateNoWait does not
// overtake a create queue: with a leader waiting for the directory,
// it declines and changes nothing.
func TestCreateBatch_NoWait_DeclinesWhileQueued(t *testing.T) {
	d := newTestDevice(t, 32<<20)
	s := openTest(t, d, Options{})
	release := holdDir(t, s, RootIno)
	done := make(chan error, 1)
	go func() {
		_, err := s.Create(RootIno, "queued", 0o644)
		done <- err
	}()
	waitQueued(t, s, RootIno, 1)
	// The directory's lock is free for a moment between the leader's
	// passes; CreateNoWait must decline on the queue alone.
	release()
	for createQueued(s, RootIno) > 0 {
		// It may make it once the queue has just ended: then EEXIST.
		if _, err := s.CreateNoWait(RootIno, "raced", 0o644); err != nil && !errors.Is(err, ErrWouldWait) && !errors.Is(err, syscall.EEXIST) {
			t.Fatalf("CreateNoWait: %v", err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Deterministically: a queue that exists makes it decline.
	sh := s.creates.shard(RootIno)
	sh.mu.Lock()
	sh.dirs[RootIno] = &createQueue{}
	sh.mu.Unlock()
	next := s.nextIno.Load()
	if _, err := s.CreateNoWait(RootIno, "inline", 0o644); !errors.Is(err, ErrWouldWait) {
		t.Fatalf("CreateNoWait with a queue: %v, want ErrWouldWait", err)
	}
	if _, err := s.Lookup(RootIno, "inline"); !errors.Is(err, syscall.ENOENT) || s.nextIno.Load() != next {
		t.Fatalf("a declined CreateNoWait changed something: lookup %v, next inode %d -> %d", err, next, s.nextIno.Load())
	}
	sh.mu.Lock()
	delete(sh.dirs, RootIno)
	sh.mu.Unlock()
	closeCheck(t, s)
}

// TestCreateBatch_DirDeleted: creates queued on a directory removed before
// their pass all get ENOENT and leave nothing.
func TestCreateBatch_DirDeleted(t *testing.T) {
	d := newTestDevice(t, 32<<20)
	s := openTest(t, d, Options{})
	sub, err := s.Mkdir(RootIno, "d", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	next := s.nextIno.Load()
	release := holdDir(t, s, sub.Ino)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Create(sub.Ino, fmt.Sprintf("f%d", i), 0o644)
		}()
	}
	waitQueued(t, s, sub.Ino, len(errs))
	// Remove it as rmdir would, under the lock the test holds.
	dd := s.itab.peek(sub.Ino)
	dd.deleted.Store(true)
	release()
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, syscall.ENOENT) {
			t.Fatalf("create %d in a deleted directory: %v, want ENOENT", i, err)
		}
	}
	if s.nextIno.Load() != next {
		t.Fatalf("next inode %d -> %d", next, s.nextIno.Load())
	}
	dd.deleted.Store(false)
	if ents, _ := s.ReadDir(sub.Ino, 0, 100); len(ents) != 0 {
		t.Fatalf("entries %v", ents)
	}
	closeCheck(t, s)
}
