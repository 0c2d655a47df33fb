package store

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"ustore/dev/memdev"
)

// crashReopen cuts power on d (keeping none of its unflushed writes) and
// mounts what is left, replaying the log.
func crashReopen(t *testing.T, d *memdev.Device) (*Store, *memdev.Device) {
	t.Helper()
	c := d.Crash(memdev.KeepNone())
	s := openTest(t, c, Options{CommitInterval: 0})
	if err := s.Check(); err != nil {
		t.Fatalf("fsck after replay: %v", err)
	}
	return s, c
}

// TestLog_FsyncIsLoggedNotCommitted: an fsync of a written file logs it —
// no commit — and the data and name survive a crash through replay.
func TestLog_FsyncIsLoggedNotCommitted(t *testing.T) {
	d := newTestDevice(t, 64<<20)
	s := openTest(t, d, Options{CommitInterval: 5 * time.Minute})
	ctx := context.Background()
	root := uint64(256)
	a, err := s.Create(root, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("x"), 3*4096+17)
	if _, err := s.Write(a.Ino, 0, data); err != nil {
		t.Fatal(err)
	}
	commits := s.Engine().Stats().Commits
	if err := s.Fsync(ctx, a.Ino, false); err != nil {
		t.Fatal(err)
	}
	if got := s.Engine().Stats().Commits; got != commits {
		t.Fatalf("fsync committed (%d commits, had %d)", got, commits)
	}
	st := s.Stats()
	if st.FsyncLogged != 1 {
		t.Fatalf("stats %+v", st)
	}
	// Again: nothing changed, in the log already.
	if err := s.Fsync(ctx, a.Ino, false); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.FsyncInLog != 1 {
		t.Fatalf("stats %+v", st)
	}
	s2, _ := crashReopen(t, d)
	defer closeCheck(t, s2)
	if !s2.Replay().Applied {
		t.Fatalf("no replay: %+v", s2.Replay())
	}
	at, err := s2.Lookup(root, "f")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(data)+10)
	n, err := s2.Read(at.Ino, 0, buf)
	if err != nil || !bytes.Equal(buf[:n], data) {
		t.Fatalf("read %d, %v", n, err)
	}
}

// TestLog_ParallelFsync: 16 goroutines write and fsync files of one
// directory while commits run; then crash, replay, check every fsynced
// content.
func TestLog_ParallelFsync(t *testing.T) {
	d := newTestDevice(t, 256<<20)
	s := openTest(t, d, Options{CommitInterval: 5 * time.Minute})
	ctx := context.Background()
	dir, err := s.Mkdir(256, "d", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	const workers, rounds = 16, 30
	var wg sync.WaitGroup
	final := make([][]byte, workers)
	inos := make([]uint64, workers)
	errs := make(chan error, workers+1)
	stop := make(chan struct{})
	go func() { // commits while the fsyncs run
		for {
			select {
			case <-stop:
				errs <- nil
				return
			default:
			}
			if _, err := s.Engine().Commit(ctx); err != nil {
				errs <- err
				return
			}
		}
	}()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := s.Create(dir.Ino, fmt.Sprintf("f%02d", w), 0o644)
			if err != nil {
				errs <- err
				return
			}
			inos[w] = a.Ino
			var content []byte
			for r := range rounds {
				chunk := bytes.Repeat([]byte{byte(w*rounds + r)}, 1000+r*37)
				if _, err := s.Write(a.Ino, uint64(len(content)), chunk); err != nil {
					errs <- err
					return
				}
				content = append(content, chunk...)
				if err := s.Fsync(ctx, a.Ino, r%2 == 0); err != nil {
					errs <- err
					return
				}
			}
			final[w] = content
			errs <- nil
		}()
	}
	wg.Wait()
	close(stop)
	for range workers + 1 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	st := s.Stats()
	ls, _ := s.LogStats()
	t.Logf("fsync: %d logged, %d committed, %d commit, %d in log; %d log syncs for %d contexts; fallbacks %v",
		st.FsyncLogged, st.FsyncCommitted, st.FsyncCommit, st.FsyncInLog, ls.Syncs, ls.Contexts, st.FsyncFallbacks)
	if st.FsyncLogged == 0 {
		t.Fatal("no fsync was logged")
	}
	s2, _ := crashReopen(t, d)
	defer closeCheck(t, s2)
	for w := range workers {
		at, err := s2.Lookup(dir.Ino, fmt.Sprintf("f%02d", w))
		if err != nil {
			t.Fatalf("worker %d: %v", w, err)
		}
		buf := make([]byte, len(final[w])+10)
		n, err := s2.Read(at.Ino, 0, buf)
		if err != nil || !bytes.Equal(buf[:n], final[w]) {
			t.Fatalf("worker %d: read %d of %d, %v", w, n, len(final[w]), err)
		}
	}
}

// TestLog_RelogLeafOnly: an inode item logged again is updated through a
// leaf-only search: the leaf's parent is write-locked only when the leaf
// must be CoW'd (its first change in a log sub-transaction), so with
// parallel fsyncs sharing sub-transactions most relogs take no parent
// lock; the ablation (LogInsertSearch) takes it every time.
func TestLog_RelogLeafOnly(t *testing.T) {
	var locked [2]float64
	for i, ablate := range []bool{false, true} {
		d := newTestDevice(t, 64<<20)
		s := openTest(t, d, Options{CommitInterval: 5 * time.Minute, LogInsertSearch: ablate})
		ctx := context.Background()
		const workers, rounds = 16, 20
		var inos [workers]uint64
		for w := range workers {
			a, err := s.Create(256, fmt.Sprintf("f%02d", w), 0o644)
			if err != nil {
				t.Fatal(err)
			}
			inos[w] = a.Ino
		}
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := range rounds {
					if _, err := s.Write(inos[w], uint64(r%4)*4096, []byte("data")); err != nil {
						errs <- err
						return
					}
					if err := s.Fsync(ctx, inos[w], false); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		st := s.Stats().Log
		t.Logf("ablate %v: in place %d, with the parent write-locked %d; log syncs %d for %d contexts",
			ablate, st.InPlace, st.InPlaceParentLocked, st.Syncs, st.Contexts)
		if st.InPlace == 0 {
			t.Fatalf("ablate %v: no in-place relog", ablate)
		}
		locked[i] = float64(st.InPlaceParentLocked) / float64(st.InPlace)
		if ablate && st.InPlaceParentLocked != st.InPlace {
			t.Fatalf("ablation: %d of %d relogs took the parent lock", st.InPlaceParentLocked, st.InPlace)
		}
		closeCheck(t, s)
	}
	if locked[0] >= locked[1] {
		t.Fatalf("leaf-only relogs took the parent lock as often (%.2f) as the ablation (%.2f)", locked[0], locked[1])
	}
}
