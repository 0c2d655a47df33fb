package store

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"ustore/dev/memdev"
)

// Targeted replay tests: one scenario each that the log must express
// (no commit between the change and the fsync), then a power cut that
// keeps nothing unflushed, a mount that replays the log, a clean fsck and
// the content checked byte for byte.

// rpFix is a store on a memdev whose fsyncs are counted.
type rpFix struct {
	t *testing.T
	d *memdev.Device
	s *Store
}

func rpNew(t *testing.T, size int64) *rpFix {
	t.Helper()
	d := newTestDevice(t, size)
	return &rpFix{t: t, d: d, s: openTest(t, d, crashOptions())}
}

func (f *rpFix) create(dir Ino, name string) Ino {
	f.t.Helper()
	a, err := f.s.Create(dir, name, 0o644)
	if err != nil {
		f.t.Fatalf("create %q: %v", name, err)
	}
	return a.Ino
}

func (f *rpFix) mkdir(dir Ino, name string) Ino {
	f.t.Helper()
	a, err := f.s.Mkdir(dir, name, 0o755)
	if err != nil {
		f.t.Fatalf("mkdir %q: %v", name, err)
	}
	return a.Ino
}

func (f *rpFix) write(ino Ino, off uint64, data []byte) {
	f.t.Helper()
	if n, err := f.s.Write(ino, off, data); err != nil || n != len(data) {
		f.t.Fatalf("write %d at %d+%d: %d, %v", ino, off, len(data), n, err)
	}
}

func (f *rpFix) truncate(ino Ino, size uint64) {
	f.t.Helper()
	if err := f.s.Truncate(ino, size); err != nil {
		f.t.Fatalf("truncate %d to %d: %v", ino, size, err)
	}
}

func (f *rpFix) sync() {
	f.t.Helper()
	if err := f.s.Sync(context.Background()); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
}

// fsyncLogged fsyncs ino and requires that the log took it: no commit, one
// more logged fsync.
func (f *rpFix) fsyncLogged(ino Ino) {
	f.t.Helper()
	outcome := f.fsync(ino)
	if outcome != "logged" {
		f.t.Fatalf("fsync %d: %s, want logged (stats %+v)", ino, outcome, f.s.Stats())
	}
}

// fsync fsyncs ino and says how: "logged", "commit (reasons)", "in log",
// "committed".
func (f *rpFix) fsync(ino Ino) string {
	f.t.Helper()
	st0, commits0 := f.s.Stats(), f.s.Engine().Stats().Commits
	if err := f.s.Fsync(context.Background(), ino, false); err != nil {
		f.t.Fatalf("fsync %d: %v", ino, err)
	}
	st, commits := f.s.Stats(), f.s.Engine().Stats().Commits
	switch {
	case st.FsyncCommit > st0.FsyncCommit:
		return fmt.Sprintf("commit %v", st.FsyncFallbacks)
	case st.FsyncLogged > st0.FsyncLogged && commits == commits0:
		return "logged"
	case st.FsyncLogged > st0.FsyncLogged:
		return "logged, but a commit ran"
	case st.FsyncInLog > st0.FsyncInLog:
		return "in log"
	}
	return "committed"
}

// crash cuts power (nothing unflushed survives), mounts what is left and
// checks it; the fixture's store is the new one. It requires that the
// mount replayed a log.
func (f *rpFix) crash() { f.t.Helper(); f.crashReplay(true) }

// crashReplay is crash; replayed says whether the mount must find a log
// (false: it must not, everything having been committed).
func (f *rpFix) crashReplay(replayed bool) {
	f.t.Helper()
	c := f.d.Crash(memdev.KeepNone())
	f.s.Close(context.Background()) // the old store: its device is gone for the test
	s, err := Open(c, crashOptions())
	if err != nil {
		f.t.Fatalf("open after crash: %v", err)
	}
	f.d, f.s = c, s
	f.t.Cleanup(func() { s.Close(context.Background()) })
	if rep := s.Replay(); rep.Applied != replayed || rep.Found != replayed || rep.Lost != nil {
		f.t.Fatalf("replay: %+v (a log expected: %v)", rep, replayed)
	}
	if err := cpCheck(s); err != nil {
		f.t.Fatalf("fsck after replay: %v", err)
	}
}

func (f *rpFix) lookup(dir Ino, name string) Ino {
	f.t.Helper()
	a, err := f.s.Lookup(dir, name)
	if err != nil {
		f.t.Fatalf("lookup %q in %d: %v", name, dir, err)
	}
	return a.Ino
}

// wantContent requires that ino holds exactly want.
func (f *rpFix) wantContent(ino Ino, want []byte) {
	f.t.Helper()
	a, err := f.s.Stat(ino)
	if err != nil {
		f.t.Fatalf("stat %d: %v", ino, err)
	}
	if a.Size != uint64(len(want)) {
		f.t.Fatalf("inode %d: size %d, want %d", ino, a.Size, len(want))
	}
	got := make([]byte, len(want)+4096)
	n, err := f.s.Read(ino, 0, got)
	if err != nil {
		f.t.Fatalf("read %d: %v", ino, err)
	}
	got = got[:n]
	if !bytes.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		f.t.Fatalf("inode %d: %d bytes, want %d; first difference at %d", ino, len(got), len(want), i)
	}
}

// names lists dir's entries: name → inode.
func (f *rpFix) names(dir Ino) map[string]Ino {
	f.t.Helper()
	out := map[string]Ino{}
	var cookie uint64
	for {
		es, err := f.s.ReadDir(dir, cookie, 256)
		if err != nil {
			f.t.Fatalf("readdir %d: %v", dir, err)
		}
		for _, e := range es {
			out[e.Name] = e.Ino
			cookie = e.Cookie
		}
		if len(es) < 256 {
			return out
		}
	}
}

// TestLogReplay_SecondFsyncSameTransaction: fsync, append, fsync again in
// the same transaction — the inode is logged twice, its item updated in
// place — and the replay gives the content of the second fsync.
func TestLogReplay_SecondFsyncSameTransaction(t *testing.T) {
	f := rpNew(t, 64<<20)
	ino := f.create(RootIno, "f")
	v1 := crashData(1, 0, 3*blockSize+100)
	f.write(ino, 0, v1)
	f.fsyncLogged(ino)
	v2 := append(v1, crashData(2, len(v1), 2*blockSize+7)...)
	f.write(ino, uint64(len(v1)), v2[len(v1):])
	f.fsyncLogged(ino)
	// A third, overwriting inside what the first logged.
	copy(v2[100:], crashData(3, 100, 50))
	f.write(ino, 100, v2[100:150])
	f.fsyncLogged(ino)
	if st := f.s.Stats(); st.FsyncLogged != 3 || st.FsyncCommit != 0 {
		t.Fatalf("stats %+v", st)
	}
	f.crash()
	f.wantContent(f.lookup(RootIno, "f"), v2)
}

// TestLogReplay_TruncateDown: a committed file cut shorter and fsynced;
// and a new file, logged, then cut and fsynced again.
func TestLogReplay_TruncateDown(t *testing.T) {
	f := rpNew(t, 64<<20)
	a := f.create(RootIno, "a")
	va := crashData(1, 0, 5*blockSize+300)
	f.write(a, 0, va)
	f.sync()
	b := f.create(RootIno, "b")
	vb := crashData(2, 0, 4*blockSize+10)
	f.write(b, 0, vb)
	f.fsyncLogged(b)

	f.truncate(a, 5000)
	f.fsyncLogged(a)
	f.truncate(b, blockSize+1)
	f.fsyncLogged(b)
	f.crash()
	f.wantContent(f.lookup(RootIno, "a"), va[:5000])
	f.wantContent(f.lookup(RootIno, "b"), vb[:blockSize+1])
}

// TestLogReplay_TruncateDownThenExtend: cut, then grown again (a sparse
// tail), then fsynced: past the cut the file reads zeros — nothing of the
// cut-off bytes comes back, neither from the committed extents nor from
// the page that held the cut.
func TestLogReplay_TruncateDownThenExtend(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cut, grow uint64
		byWrite   bool // grow by writing one byte at grow-1, not by truncate
	}{
		{"mid-block", 5000, 40000, false},
		{"block-aligned", 2 * blockSize, 10 * blockSize, false},
		{"to-zero", 0, 3*blockSize + 5, false},
		{"write-past-end", 5000, 40000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := rpNew(t, 64<<20)
			ino := f.create(RootIno, "f")
			v := crashData(1, 0, 6*blockSize+123)
			f.write(ino, 0, v)
			f.sync()
			f.truncate(ino, tc.cut)
			want := make([]byte, tc.grow)
			copy(want, v[:tc.cut])
			if tc.byWrite {
				want[tc.grow-1] = 0x5a
				f.write(ino, tc.grow-1, []byte{0x5a})
			} else {
				f.truncate(ino, tc.grow)
			}
			f.fsyncLogged(ino)
			f.crash()
			f.wantContent(f.lookup(RootIno, "f"), want)
		})
	}
}

// TestLogReplay_OverwriteMiddleOfLargeFile: 4 KiB overwritten in the
// middle of a committed 1 MiB file: after replay only those 4 KiB differ,
// and the log carried only about them (the 2011 csum patch: fsync cost
// follows the change, not the file size).
func TestLogReplay_OverwriteMiddleOfLargeFile(t *testing.T) {
	f := rpNew(t, 64<<20)
	ino := f.create(RootIno, "big")
	v := crashData(1, 0, 1<<20)
	f.write(ino, 0, v)
	f.sync()
	const off = 512<<10 + 3*blockSize
	patch := crashData(2, off, blockSize)
	f.write(ino, off, patch)
	copy(v[off:], patch)
	f.fsyncLogged(ino)
	f.crash()
	f.wantContent(f.lookup(RootIno, "big"), v)
	rep := f.s.Replay()
	t.Logf("replay: %d inodes, %d file ranges, %d data bytes", rep.Inodes, rep.FileRanges, rep.DataBytes)
	if rep.DataBytes > 4*blockSize {
		t.Errorf("the log referenced %d bytes of data for a 4 KiB overwrite", rep.DataBytes)
	}
	// Still readable after another commit (the replayed extents are the
	// tree's now).
	f.sync()
	f.wantContent(ino, v)
	if err := cpCheck(f.s); err != nil {
		t.Fatal(err)
	}
}

// TestLogReplay_DirFsyncManyEntries: 2,000 files in one directory, half
// committed and half new, the directory fsynced: after a crash every name
// is there. Then every 100th unlinked and the directory fsynced again:
// those names are gone, the rest are there — in the same transaction as
// the creates (after their fsync, or with one fsync for both) and in a
// later one (committed entries removed).
func TestLogReplay_DirFsyncManyEntries(t *testing.T) {
	const total, committed = 2000, 1000
	name := func(i int) string { return fmt.Sprintf("file-%05d", i) }
	for _, tc := range []struct {
		name       string
		fsyncFirst bool // fsync the directory after the creates
		commitMid  bool // commit between the creates and the unlinks
		crashFirst bool // crash after the first fsync and check it
	}{
		{"creates", true, false, true},
		{"unlinks-same-transaction", true, false, false},
		{"unlinks-after-commit", true, true, false},
		{"creates-and-unlinks-one-fsync", false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := rpNew(t, 128<<20)
			dir := f.mkdir(RootIno, "d")
			inos := map[string]Ino{}
			for i := range committed {
				inos[name(i)] = f.create(dir, name(i))
			}
			f.sync()
			for i := committed; i < total; i++ {
				inos[name(i)] = f.create(dir, name(i))
			}
			if tc.fsyncFirst {
				f.fsyncLogged(dir)
			}
			if tc.crashFirst {
				f.crash()
				got := f.names(dir)
				if len(got) != total {
					t.Errorf("%d names after replay, want %d", len(got), total)
				}
				for n, ino := range inos {
					if got[n] != ino {
						t.Fatalf("%q: inode %d, want %d", n, got[n], ino)
					}
				}
				return
			}
			if tc.commitMid {
				f.sync()
			}
			gone := map[string]bool{}
			for i := 0; i < total; i += 100 {
				if err := f.s.Unlink(dir, name(i)); err != nil {
					t.Fatal(err)
				}
				gone[name(i)] = true
			}
			// In the creates' transaction the directory's entries are in
			// the log already: removing names from it may fall back to a
			// commit (logtrack: stale); after a commit the log takes it.
			outcome := f.fsync(dir)
			t.Logf("fsync of the directory after the unlinks: %s", outcome)
			if (tc.commitMid || !tc.fsyncFirst) && outcome != "logged" {
				t.Errorf("fsync of the directory after the unlinks: %s, want logged", outcome)
			}
			f.crashReplay(outcome == "logged")
			got := f.names(dir)
			if len(got) != total-len(gone) {
				t.Errorf("%d names after replay, want %d", len(got), total-len(gone))
			}
			for n, ino := range inos {
				switch {
				case gone[n] && got[n] != 0:
					t.Fatalf("%q: unlinked and fsynced, back as inode %d", n, got[n])
				case !gone[n] && got[n] != ino:
					t.Fatalf("%q: inode %d, want %d", n, got[n], ino)
				}
			}
			for n := range gone {
				if _, err := f.s.Stat(inos[n]); err == nil {
					t.Fatalf("%q: inode %d still exists without a name", n, inos[n])
				}
			}
		})
	}
}

// TestLogReplay_HardLinkInNewDirectory: a file gets a second name in a
// directory made in this transaction and is fsynced: both names survive,
// with the new directory. Once for a file committed before, once for a file
// already logged in this transaction (whose names are in the log).
func TestLogReplay_HardLinkInNewDirectory(t *testing.T) {
	for _, logged := range []bool{false, true} {
		t.Run(fmt.Sprintf("logged-before=%v", logged), func(t *testing.T) {
			f := rpNew(t, 64<<20)
			ino := f.create(RootIno, "f")
			v := crashData(1, 0, 2*blockSize+9)
			f.write(ino, 0, v)
			if logged {
				f.fsyncLogged(ino)
			} else {
				f.sync()
			}
			dir := f.mkdir(RootIno, "n")
			if _, err := f.s.Link(ino, dir, "l"); err != nil {
				t.Fatal(err)
			}
			outcome := f.fsync(ino)
			t.Logf("fsync after the link: %s", outcome)
			if !logged && outcome != "logged" {
				t.Errorf("fsync after the link: %s, want logged", outcome)
			}
			f.crashReplay(outcome == "logged")
			if got := f.lookup(RootIno, "f"); got != ino {
				t.Fatalf("f: inode %d, want %d", got, ino)
			}
			dir2 := f.lookup(RootIno, "n")
			if got := f.lookup(dir2, "l"); got != ino {
				t.Fatalf("n/l: inode %d, want %d", got, ino)
			}
			f.wantContent(ino, v)
			a, err := f.s.Stat(ino)
			if err != nil || a.Nlink != 2 {
				t.Fatalf("stat: %+v, %v; want 2 links", a, err)
			}
		})
	}
}

// TestLogReplay_FileInNewNestedDirectories: mkdir a; mkdir a/b; create
// a/b/f; fsync a/b/f: after a crash the path and the content are there.
func TestLogReplay_FileInNewNestedDirectories(t *testing.T) {
	f := rpNew(t, 64<<20)
	a := f.mkdir(RootIno, "a")
	b := f.mkdir(a, "b")
	ino := f.create(b, "f")
	v := crashData(1, 0, 3*blockSize+77)
	f.write(ino, 0, v)
	f.fsyncLogged(ino)
	f.crash()
	a2 := f.lookup(RootIno, "a")
	b2 := f.lookup(a2, "b")
	if got := f.lookup(b2, "f"); got != ino {
		t.Fatalf("a/b/f: inode %d, want %d", got, ino)
	}
	f.wantContent(ino, v)
	for d, nlink := range map[Ino]uint32{a2: 3, b2: 2} {
		at, err := f.s.Stat(d)
		if err != nil || !at.IsDir() || at.Nlink != nlink {
			t.Fatalf("directory %d: %+v, %v; want %d links", d, at, err, nlink)
		}
	}
}

// TestLogReplay_InlineData: small files whose data lives in the tree
// (inline extents): a new one, one that grows out of inline, one cut back
// to a few bytes, and one cut to nothing — each fsynced (fdatasync for
// two) and replayed.
func TestLogReplay_InlineData(t *testing.T) {
	f := rpNew(t, 64<<20)
	grow := f.create(RootIno, "grow")
	vg := crashData(1, 0, 100)
	f.write(grow, 0, vg)
	shrink := f.create(RootIno, "shrink")
	vs := crashData(2, 0, 3*blockSize)
	f.write(shrink, 0, vs)
	empty := f.create(RootIno, "empty")
	f.write(empty, 0, crashData(3, 0, 50))
	f.sync()

	small := f.create(RootIno, "small")
	v := crashData(4, 0, 200)
	f.write(small, 0, v)
	vg = append(vg, crashData(5, len(vg), 6000)...)
	f.write(grow, 100, vg[100:])
	f.truncate(shrink, 30)
	f.truncate(empty, 0)
	for i, ino := range []Ino{small, grow, shrink, empty} {
		if err := f.s.Fsync(context.Background(), ino, i%2 == 1); err != nil {
			t.Fatal(err)
		}
	}
	if st := f.s.Stats(); st.FsyncLogged != 4 || st.FsyncCommit != 0 {
		t.Fatalf("stats %+v", st)
	}
	f.crash()
	f.wantContent(f.lookup(RootIno, "small"), v)
	f.wantContent(f.lookup(RootIno, "grow"), vg)
	f.wantContent(f.lookup(RootIno, "shrink"), vs[:30])
	f.wantContent(f.lookup(RootIno, "empty"), nil)
}
