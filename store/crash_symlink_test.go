package store

import (
	"context"
	"math/rand/v2"
	"testing"
)

// TestCrash_SymlinkFsyncParent: symbolic links made and made durable by an
// fsync of their directory — the link's creation is logged by the
// directory's log, its target with it (log_inode.go, logTarget). Power is
// cut at every flush and after every write of each workload (crashPoints),
// and the harness's check (crash_test.go) holds each time: every link
// whose directory's fsync had returned exists, is a link, and has its
// exact target; fsck is clean.
func TestCrash_SymlinkFsyncParent(t *testing.T) {
	base, m0 := crashBase(t)
	mkdirF := crashOp{kind: opMkdir, a: "/F"}
	link := func(path, target string) crashOp { return crashOp{kind: opSymlink, a: path, b: target} }
	fsyncDir := func(path string) crashPP { return crashPP{ppFsyncDir, path} }
	workloads := []crashWorkload{
		{{link("/s", "A"), fsyncDir("/")}},
		{{link("/D/s", crashLongTarget), fsyncDir("/D")}},
		{{link("/E/s", "../no/such/file"), fsyncDir("/E")}},
		// Two links in one directory, one log; then a second fsync.
		{{link("/s", "A"), crashPP{kind: ppFsync, path: "/D/C"}},
			{link("/D/s", crashLongTarget), fsyncDir("/D")},
			{link("/E/s", "x"), fsyncDir("/E")}},
		// In a directory new in the transaction: the directory's name is
		// logged with it.
		{{mkdirF, fsyncDir("/")}, {link("/F/s", "/D"), fsyncDir("/F")}},
		{{mkdirF, crashPP{kind: ppFsync, path: "/D/C"}}, {link("/F/s", "/D"), fsyncDir("/F")}},
		// The link's own fsync, then its directory's.
		{{link("/s", "A"), crashPP{kind: ppFsync, path: "/s"}}, {link("/D/s", "B"), fsyncDir("/D")}},
		// A link made, then the directory logged with a file's data.
		{{link("/D/s", "C"), fsyncDir("/D")}, {crashOp{kind: opWrite, a: "/D/C", off: 0, n: 100}, crashPP{ppFsync, "/D/C"}}},
	}
	ctx := context.Background()
	points := 0
	for i, w := range workloads {
		r, err := crashRunWorkload(base, m0, w)
		if err != nil {
			t.Fatalf("workload %d [%v]: run: %v", i, w, err)
		}
		// The directory fsyncs logged: no commit made the links durable.
		s, err := Open(r.d.CrashAt(r.end, crashPoint{all: true, tear: -1}.policy(r.d)), crashOptions())
		if err != nil {
			t.Fatalf("workload %d: open: %v", i, err)
		}
		rep := s.replay
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if !rep.Applied || rep.FileRanges == 0 {
			t.Errorf("workload %d [%v]: the log replayed no target (%+v)", i, w, rep)
		}
		for _, p := range r.crashPoints(rand.New(rand.NewPCG(uint64(i), 11))) {
			points++
			if err := r.check(p); err != nil {
				t.Fatalf("workload %d [%v]: crash at %v (op start %v, persistence points done %v): %v",
					i, w, p, r.opStart[1:], r.ppDone[1:], err)
			}
		}
	}
	t.Logf("%d workloads, %d crash points", len(workloads), points)
}
