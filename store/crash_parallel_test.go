package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ustore/dev/memdev"
)

// Crash consistency of parallel fsyncs (what the log's group commit is
// for): many goroutines, each on its own file of one directory — some files
// committed before, some created by the goroutine — each doing a few
// writes, appends, overwrites and truncates, most followed by an fsync or
// fdatasync; and, in most workloads, one more goroutine committing,
// syncing or fsyncing the directory meanwhile.
//
// Every goroutine records its file's content after each of its operations
// (versions), the device's Seq when each operation began, and, for each
// fsync that returned, the version it covered and the device's Seq when it
// returned. A power cut at Seq p (the same cuts as TestCrash_Workloads:
// crashRun.crashPoints) must then leave, after the mount's replay and a
// clean fsck, each file with the content of a version from the one its last
// fsync returned by p covered to the last whose operation began before p
// (crashContentOK: a later, unsynced state, or a mix the writeback order
// allows — never an earlier one); the name of a created file must be there
// if an fsync of it, or of the directory after the create, returned by p,
// and no other name may appear.
//
// The Seqs are read around the calls, so they bound the truth from the safe
// side: an fsync is taken as returned only from a Seq read after it
// returned, an operation as begun from a Seq read before it began.
//
// By default 64 workloads run (12 under -race: with the test below, about
// 30 s on 2 cores), every crash point of each checked, and about one in 24
// that replayed a log has the replaying mount cut too, at every crash
// point of its own writes (USTORE_CRASH_NEST=n: one in n; 0: none).
// USTORE_CRASH_FULL=1 runs 2,000 workloads (USTORE_CRASH_FULL=n: n);
// USTORE_CRASH_SEED=n draws others.

// cpFiles is how many files the directory holds before a workload (each
// worker i may use file i, or create its own).
const cpFiles = 16

func cpCommittedName(i int) string { return fmt.Sprintf("p%02d", i) }
func cpNewName(i int) string       { return fmt.Sprintf("n%02d", i) }

type cpOpKind uint8

const (
	cpWrite     cpOpKind = iota // at off, n bytes (off may be past the end: a hole)
	cpAppend                    // n bytes at the end
	cpTruncate                  // to n
	cpFallocate                 // mode 0 over off+n: holes allocated, the file grown
	cpPunch                     // PUNCH_HOLE|KEEP_SIZE over off+n
)

type cpSync uint8

const (
	cpNoSync cpSync = iota
	cpFsync
	cpFdatasync
)

type cpStep struct {
	kind cpOpKind
	off  int
	n    int
	sync cpSync
}

func (s cpStep) String() string {
	var b string
	switch s.kind {
	case cpWrite:
		b = fmt.Sprintf("write %d+%d", s.off, s.n)
	case cpAppend:
		b = fmt.Sprintf("append %d", s.n)
	case cpTruncate:
		b = fmt.Sprintf("truncate %d", s.n)
	case cpFallocate:
		b = fmt.Sprintf("fallocate %d+%d", s.off, s.n)
	case cpPunch:
		b = fmt.Sprintf("punch %d+%d", s.off, s.n)
	}
	switch s.sync {
	case cpFsync:
		b += "; fsync"
	case cpFdatasync:
		b += "; fdatasync"
	}
	return b
}

type cpWorker struct {
	create bool // create n<i>; otherwise use the committed p<i>
	steps  []cpStep
}

// cpBgKind is what the extra goroutine does while the workers run.
type cpBgKind uint8

const (
	cpBgNone     cpBgKind = iota
	cpBgCommit            // engine commits (nothing written back first)
	cpBgSync              // Store.Sync: writeback and commit
	cpBgFsyncDir          // fsync of the directory
)

func (k cpBgKind) String() string {
	return [...]string{"none", "commit", "sync", "fsync-dir"}[k]
}

type cpWorkload struct {
	workers []cpWorker
	bg      cpBgKind
	bgN     int // how many times
}

func (w cpWorkload) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d workers, bg %v×%d:", len(w.workers), w.bg, w.bgN)
	for i, wk := range w.workers {
		name := cpCommittedName(i)
		if wk.create {
			name = "create " + cpNewName(i)
		}
		steps := make([]string, len(wk.steps))
		for j, s := range wk.steps {
			steps[j] = s.String()
		}
		fmt.Fprintf(&b, " [%d %s: %s]", i, name, strings.Join(steps, ", "))
	}
	return b.String()
}

// cpBaseSize is the size of committed file i.
func cpBaseSize(i int) int { return []int{0, 100, 4096, 5000, 12288, 20000, 70000, 200000}[i%8] + i }

// cpRandom draws a workload of nw workers.
func cpRandom(rng *rand.Rand, nw int) cpWorkload {
	w := cpWorkload{bg: cpBgKind(rng.IntN(4)), bgN: 1 + rng.IntN(3)}
	for i := range nw {
		wk := cpWorker{create: rng.IntN(2) == 0}
		size := 0
		if !wk.create {
			size = cpBaseSize(i)
		}
		for range 1 + rng.IntN(3) {
			var st cpStep
			switch r := rng.IntN(12); {
			case r < 4: // a write somewhere in or just past the file
				st = cpStep{kind: cpWrite, off: rng.IntN(size + 8192), n: 1 + rng.IntN(9000)}
				size = max(size, st.off+st.n)
			case r < 7:
				st = cpStep{kind: cpAppend, n: 1 + rng.IntN(9000)}
				size += st.n
			case r == 10:
				st = cpStep{kind: cpFallocate, off: rng.IntN(size + 8192), n: 1 + rng.IntN(20000)}
				size = max(size, st.off+st.n)
			case r == 11:
				st = cpStep{kind: cpPunch, off: rng.IntN(size + 1), n: 1 + rng.IntN(20000)}
			default:
				st = cpStep{kind: cpTruncate, n: rng.IntN(2*size + 5000)}
				size = st.n
			}
			switch r := rng.IntN(10); {
			case r < 5:
				st.sync = cpFsync
			case r < 8:
				st.sync = cpFdatasync
			}
			wk.steps = append(wk.steps, st)
		}
		w.workers = append(w.workers, wk)
	}
	return w
}

// cpBase formats a device with /d holding the committed files, closed.
func cpBase(t testing.TB) (*memdev.Device, Ino, [][]byte) {
	d := memdev.New(64 << 20)
	if err := Mkfs(d, MkfsOptions{NodeSize: 4096}); err != nil {
		t.Fatal(err)
	}
	s, err := Open(d, crashOptions())
	if err != nil {
		t.Fatal(err)
	}
	dir, err := s.Mkdir(RootIno, "d", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	contents := make([][]byte, cpFiles)
	for i := range cpFiles {
		a, err := s.Create(dir.Ino, cpCommittedName(i), 0o644)
		if err != nil {
			t.Fatal(err)
		}
		contents[i] = crashData(5000+i, 0, cpBaseSize(i))
		if _, err := s.Write(a.Ino, 0, contents[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return d, dir.Ino, contents
}

// cpFsyncDone is an fsync that returned: the version it covered, and the
// device's Seq when it had returned.
type cpFsyncDone struct {
	ver  int
	done uint64
}

// cpRecord is what one worker did.
type cpRecord struct {
	name        string
	create      bool
	createStart uint64 // Seq before the create began
	ino         Ino    // 0: the create failed or never ran
	created     atomic.Bool
	versions    [][]byte // [0]: before the first operation (empty for a created file)
	opStart     []uint64 // opStart[j]: Seq before the operation that made versions[j] (j ≥ 1)
	fsyncs      []cpFsyncDone
}

// cpDirFsync is an fsync of the directory that returned at done, begun
// when the workers in created had their files.
type cpDirFsync struct {
	done    uint64
	created []bool
}

type cpRun struct {
	w          cpWorkload
	d          *memdev.Device
	dir        Ino
	start, end uint64
	recs       []*cpRecord
	committed  [][]byte // the committed files' contents
	dirFsyncs  []cpDirFsync
	stats      Stats
	commits    uint64 // engine commits during the run
}

// cpRunWorkload runs w on a copy of base.
func cpRunWorkload(base *memdev.Device, dir Ino, committed [][]byte, w cpWorkload, step int) (*cpRun, error) {
	ctx := context.Background()
	d := base.Crash(memdev.KeepNone())
	s, err := Open(d, cpOptions(step))
	if err != nil {
		return nil, err
	}
	defer s.Close(ctx)
	r := &cpRun{w: w, d: d, dir: dir, committed: committed}
	for i, wk := range w.workers {
		rec := &cpRecord{name: cpCommittedName(i), create: wk.create, versions: [][]byte{nil}, opStart: []uint64{0}}
		if wk.create {
			rec.name = cpNewName(i)
		} else {
			a, err := s.Lookup(dir, rec.name)
			if err != nil {
				return nil, err
			}
			rec.ino = a.Ino
			rec.versions[0] = committed[i]
		}
		r.recs = append(r.recs, rec)
	}
	r.start = d.Seq()
	commits0 := s.Engine().Stats().Commits

	var (
		wg      sync.WaitGroup
		working atomic.Int32
		errMu   sync.Mutex
		errs    []error
	)
	fail := func(err error) {
		errMu.Lock()
		errs = append(errs, err)
		errMu.Unlock()
	}
	start := make(chan struct{})
	working.Store(int32(len(w.workers)))
	for i, wk := range w.workers {
		rec := r.recs[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer working.Add(-1)
			<-start
			if rec.create {
				rec.createStart = d.Seq()
				a, err := s.Create(dir, rec.name, 0o644)
				if err != nil {
					fail(fmt.Errorf("worker %d: create: %w", i, err))
					return
				}
				rec.ino = a.Ino
				rec.created.Store(true)
			}
			for j, st := range wk.steps {
				cur := rec.versions[len(rec.versions)-1]
				var next []byte
				begin := d.Seq()
				var err error
				switch st.kind {
				case cpWrite, cpAppend:
					off := st.off
					if st.kind == cpAppend {
						off = len(cur)
					}
					data := crashData(step*1000+i*10+j, off, st.n)
					next = make([]byte, max(len(cur), off+st.n))
					copy(next, cur)
					copy(next[off:], data)
					var n int
					n, err = s.Write(rec.ino, uint64(off), data)
					if err == nil && n != len(data) {
						err = fmt.Errorf("short write %d of %d", n, len(data))
					}
				case cpTruncate:
					next = make([]byte, st.n)
					copy(next, cur)
					err = s.Truncate(rec.ino, uint64(st.n))
				case cpFallocate:
					next = make([]byte, max(len(cur), st.off+st.n))
					copy(next, cur)
					_, err = s.Fallocate(rec.ino, 0, int64(st.off), int64(st.n))
				case cpPunch:
					next = slices.Clone(cur)
					if st.off < len(next) {
						clear(next[st.off:min(st.off+st.n, len(next))])
					}
					_, err = s.Fallocate(rec.ino, FallocPunchHole|FallocKeepSize, int64(st.off), int64(st.n))
				}
				if err != nil {
					fail(fmt.Errorf("worker %d step %d (%v): %w", i, j, st, err))
					return
				}
				rec.versions = append(rec.versions, next)
				rec.opStart = append(rec.opStart, begin)
				if st.sync != cpNoSync {
					if err := s.Fsync(ctx, rec.ino, st.sync == cpFdatasync); err != nil {
						fail(fmt.Errorf("worker %d step %d (%v): %w", i, j, st, err))
						return
					}
					rec.fsyncs = append(rec.fsyncs, cpFsyncDone{ver: len(rec.versions) - 1, done: d.Seq()})
				}
			}
		}()
	}
	if w.bg != cpBgNone {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for k := 0; k < w.bgN && working.Load() > 0; k++ {
				runtime.Gosched()
				var err error
				switch w.bg {
				case cpBgCommit:
					_, err = s.Engine().Commit(ctx)
				case cpBgSync:
					err = s.Sync(ctx)
				case cpBgFsyncDir:
					created := make([]bool, len(r.recs))
					for i, rec := range r.recs {
						created[i] = rec.created.Load()
					}
					if err = s.Fsync(ctx, dir, false); err == nil {
						r.dirFsyncs = append(r.dirFsyncs, cpDirFsync{done: d.Seq(), created: created})
					}
				}
				if err != nil {
					fail(fmt.Errorf("background %v: %w", w.bg, err))
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	r.end = d.Seq()
	r.stats = s.Stats()
	r.commits = s.Engine().Stats().Commits - commits0
	return r, nil
}

// check mounts what power cut p left and checks it against r. It returns
// whether the mount replayed a log. With nested, a replaying mount is
// itself cut at every crash point of its own writes (the replay's commit),
// and each of those is mounted and checked against the same cut p: a
// replay interrupted by a power cut is replayed again, or was committed
// whole. after: the store must stay usable (crashAfter).
func (r *cpRun) check(p crashPoint, after bool, nested *rand.Rand) (replayed bool, nestedPts int, err error) {
	crashed := r.d.CrashAt(p.seq, p.policy(r.d))
	s, err := Open(crashed, crashOptions())
	if err != nil {
		return false, 0, fmt.Errorf("open: %w", err)
	}
	defer s.Close(context.Background())
	mounted := crashed.Seq()
	replayed = s.Replay().Applied
	disk, err := r.verify(s, p.seq)
	if err != nil {
		return replayed, 0, err
	}
	if nested != nil && replayed {
		for _, q := range (&crashRun{d: crashed, start: 0, end: mounted}).crashPoints(nested) {
			nestedPts++
			if err := r.checkNested(crashed, q, p.seq); err != nil {
				return replayed, nestedPts, fmt.Errorf("the replaying mount cut at %v: %w", q, err)
			}
		}
	}
	if after {
		return replayed, nestedPts, crashAfter(s, disk)
	}
	return replayed, nestedPts, nil
}

// checkNested mounts what cut q of the replaying mount on crashed left.
func (r *cpRun) checkNested(crashed *memdev.Device, q crashPoint, seq uint64) error {
	c := crashed.CrashAt(q.seq, q.policy(crashed))
	s, err := Open(c, crashOptions())
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer s.Close(context.Background())
	_, err = r.verify(s, seq)
	return err
}

// verify checks the store s, mounted after a power cut at seq, against r:
// fsck, the log not lost, every file and name.
func (r *cpRun) verify(s *Store, seq uint64) (*crashDisk, error) {
	if lost := s.Replay().Lost; lost != nil {
		return nil, fmt.Errorf("replay: the log was lost: %w", lost)
	}
	if err := cpCheck(s); err != nil {
		return nil, fmt.Errorf("fsck: %w", err)
	}
	disk, err := crashWalk(s)
	if err != nil {
		return nil, err
	}
	var errs []error
	names := map[string]bool{}
	for i, rec := range r.recs {
		names[rec.name] = true
		lower := 0
		for _, f := range rec.fsyncs {
			if f.done <= seq {
				lower = f.ver
			}
		}
		upper := 0
		for j := 1; j < len(rec.opStart); j++ {
			if rec.opStart[j] < seq {
				upper = j
			}
		}
		upper = max(upper, lower)
		mustExist := !rec.create || len(rec.fsyncs) > 0 && rec.fsyncs[0].done <= seq
		for _, df := range r.dirFsyncs {
			if df.done <= seq && df.created[i] {
				mustExist = true
			}
		}
		got, present := disk.ents[crashEntry{r.dir, rec.name}]
		switch {
		case !present && mustExist:
			errs = append(errs, fmt.Errorf("worker %d: %s gone, but made durable", i, rec.name))
			continue
		case !present:
			continue
		case rec.create && (rec.createStart >= seq || rec.ino == 0):
			errs = append(errs, fmt.Errorf("worker %d: %s exists (inode %d), but its create had not begun", i, rec.name, got))
			continue
		case got != rec.ino:
			errs = append(errs, fmt.Errorf("worker %d: %s is inode %d, want %d", i, rec.name, got, rec.ino))
			continue
		}
		data, ok := disk.files[got]
		if !ok {
			errs = append(errs, fmt.Errorf("worker %d: %s (inode %d) is not a file", i, rec.name, got))
			continue
		}
		// One of the versions exactly (the common case, and cheap), or a
		// mix the writeback order allows.
		exact := slices.ContainsFunc(rec.versions[lower:upper+1], func(v []byte) bool { return bytes.Equal(v, data) })
		if !exact && !crashContentOK(data, rec.versions[lower:upper+1]) {
			sizes := make([]int, 0, upper+1-lower)
			for _, v := range rec.versions[lower : upper+1] {
				sizes = append(sizes, len(v))
			}
			errs = append(errs, fmt.Errorf("worker %d: %s: %d bytes, not one of versions %d..%d (sizes %v; fsyncs %v, op starts %v)%s",
				i, rec.name, len(data), lower, upper, sizes, rec.fsyncs, rec.opStart[1:], cpFirstDiff(data, rec.versions[lower:upper+1])))
		}
	}
	// The committed files no worker used: untouched.
	for i := range r.committed {
		if i < len(r.recs) && !r.recs[i].create {
			continue
		}
		name := cpCommittedName(i)
		names[name] = true
		ino, ok := disk.ents[crashEntry{r.dir, name}]
		if data := disk.files[ino]; !ok || string(data) != string(r.committed[i]) {
			errs = append(errs, fmt.Errorf("%s, committed and untouched: present %v, %d bytes, want %d", name, ok, len(data), len(r.committed[i])))
		}
	}
	for e := range disk.ents {
		switch {
		case e.dir == RootIno && e.name == "d":
		case e.dir == r.dir && names[e.name]:
		default:
			errs = append(errs, fmt.Errorf("unexpected name %q in directory %d", e.name, e.dir))
		}
	}
	return disk, errors.Join(errs...)
}

// cpCheck is fsck on a freshly mounted store. (Until the journal waited
// for its Committed callback, an fsck right after a replaying mount could
// find the replayed log's blocks not yet released: this is where that
// showed.)
func cpCheck(s *Store) error { return s.Check() }

// cpFirstDiff says where got first differs from the version of its size.
func cpFirstDiff(got []byte, vals [][]byte) string {
	for k, v := range slices.Backward(vals) {
		if len(v) != len(got) {
			continue
		}
		for o := range got {
			if got[o] != v[o] {
				return fmt.Sprintf("; differs from version +%d of that size at %d (%#x, want %#x)", k, o, got[o], v[o])
			}
		}
	}
	return ""
}

// cpTotals are a test's figures.
type cpTotals struct {
	workloads, points, replayed atomic.Int64
	nested                      atomic.Int64 // cuts of replaying mounts checked
	logged, commit, inLog       atomic.Uint64
	commits                     atomic.Uint64
	failures                    atomic.Int64
}

func (tot *cpTotals) add(st Stats) {
	tot.logged.Add(st.FsyncLogged)
	tot.commit.Add(st.FsyncCommit)
	tot.inLog.Add(st.FsyncInLog)
}

// cpRunAll runs the workloads on GOMAXPROCS goroutines, each checked at
// every crash point (sample > 1: every sample-th, and every flush); about
// one crash point in nestEvery also has its replaying mount cut (0: none).
func cpRunAll(t *testing.T, base *memdev.Device, dir Ino, committed [][]byte, ws []cpWorkload, sample, nestEvery int, tot *cpTotals) {
	const maxReported = 10
	fail := func(format string, args ...any) {
		if tot.failures.Add(1) <= maxReported {
			t.Errorf(format, args...)
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(ws) || tot.failures.Load() >= maxReported {
					return
				}
				w := ws[i]
				r, err := cpRunWorkload(base, dir, committed, w, i)
				if err != nil {
					fail("workload %d [%v]: run: %v", i, w, err)
					continue
				}
				tot.workloads.Add(1)
				tot.add(r.stats)
				tot.commits.Add(r.commits)
				rng := rand.New(rand.NewPCG(uint64(i), 11))
				pts := (&crashRun{d: r.d, start: r.start, end: r.end}).crashPoints(rng)
				pts = append(pts, crashPoint{seq: r.end, tear: -1})
				flushes := map[uint64]bool{}
				for _, op := range r.d.Ops() {
					if op.Kind == memdev.OpFlush {
						flushes[op.Seq] = true
					}
				}
				for k, p := range pts {
					isFlush := !p.all && p.keep == 0 && p.tear < 0 && flushes[p.seq]
					if sample > 1 && k%sample != 0 && !isFlush && k != len(pts)-1 {
						continue
					}
					tot.points.Add(1)
					var nested *rand.Rand
					if nestEvery > 0 && rng.IntN(nestEvery) == 0 {
						nested = rng
					}
					replayed, nestedPts, err := r.check(p, k%8 == 0, nested)
					if replayed {
						tot.replayed.Add(1)
					}
					tot.nested.Add(int64(nestedPts))
					if err != nil {
						fail("workload %d [%v]: crash at %v: %v", i, w, p, err)
						break
					}
				}
			}
		}()
	}
	wg.Wait()
}

// cpOptions are the options workload i runs with: one in three with the
// default run of delta records after each log checkpoint (most syncs
// deltas), one in three with a checkpoint after every delta, one in three
// after every third — so that the runs cross checkpoints, where the log's
// nodes change hands between the syncs.
func cpOptions(i int) Options {
	o := crashOptions()
	o.LogDeltaRun = []int{0, 1, 3}[i%3]
	return o
}

func cpSeed() uint64 {
	if v, err := strconv.ParseUint(os.Getenv("USTORE_CRASH_SEED"), 10, 64); err == nil {
		return v
	}
	return 20250113
}

// TestCrashParallel_Workloads: random workloads of 4–16 goroutines fsyncing
// their own files in parallel, checked at every crash point.
func TestCrashParallel_Workloads(t *testing.T) {
	env := os.Getenv("USTORE_CRASH_FULL")
	full := env != "" && env != "0"
	start := time.Now()
	base, dir, committed := cpBase(t)
	seed := cpSeed()
	rng := rand.New(rand.NewPCG(seed, 3))
	n := 64
	if raceEnabled() {
		n = 12
	}
	if testing.Short() {
		n = 4
	}
	if full {
		n = 2000
		if k, err := strconv.Atoi(env); err == nil && k > 1 {
			n = k
		}
	}
	sizes := []int{4, 4, 6, 8, 8, 12, 16}
	var ws []cpWorkload
	for range n {
		ws = append(ws, cpRandom(rng, sizes[rng.IntN(len(sizes))]))
	}
	var tot cpTotals
	nest := 24
	if k, err := strconv.Atoi(os.Getenv("USTORE_CRASH_NEST")); err == nil && k >= 0 {
		nest = k
	}
	cpRunAll(t, base, dir, committed, ws, 1, nest, &tot)
	mode := "default"
	if full {
		mode = "full"
	}
	t.Logf("%s (seed %d): %d workloads × their crash points = %d crash points checked (%d with a log replayed), and %d cuts of replaying mounts; fsyncs: %d logged, %d committed instead, %d already in the log; %d commits meanwhile; %v",
		mode, seed, tot.workloads.Load(), tot.points.Load(), tot.replayed.Load(), tot.nested.Load(),
		tot.logged.Load(), tot.commit.Load(), tot.inLog.Load(), tot.commits.Load(), time.Since(start).Round(time.Millisecond))
	if tot.failures.Load() == 0 && tot.logged.Load() == 0 {
		t.Error("no fsync was logged: the workloads do not exercise the log")
	}
	if tot.failures.Load() == 0 && tot.replayed.Load() == 0 {
		t.Error("no crash point replayed a log")
	}
}

// TestCrashParallel_SixteenFsyncersWithCommits: parallel fsync under -race —
// 16 goroutines writing and fsyncing different files of one directory
// (half committed before, half created) while another commits again and
// again; then crash, replay and check, at every crash point of the run
// (under -race every other one, and every flush).
func TestCrashParallel_SixteenFsyncersWithCommits(t *testing.T) {
	start := time.Now()
	base, dir, committed := cpBase(t)
	rng := rand.New(rand.NewPCG(cpSeed(), 5))
	var ws []cpWorkload
	for range 2 {
		w := cpWorkload{bg: cpBgCommit, bgN: 1 << 30}
		for i := range 16 {
			wk := cpWorker{create: i%2 == 1}
			for k := range 5 {
				st := cpStep{kind: cpAppend, n: 500 + rng.IntN(6000), sync: cpSync(1 + k%2)}
				switch k {
				case 2:
					st = cpStep{kind: cpWrite, off: rng.IntN(4096), n: 1 + rng.IntN(8192), sync: cpFsync}
				case 3:
					st = cpStep{kind: cpTruncate, n: rng.IntN(6000), sync: cpFdatasync}
				}
				wk.steps = append(wk.steps, st)
			}
			w.workers = append(w.workers, wk)
		}
		ws = append(ws, w)
	}
	sample := 1
	if raceEnabled() {
		sample = 2
	}
	var tot cpTotals
	cpRunAll(t, base, dir, committed, ws, sample, 0, &tot)
	t.Logf("%d workloads of 16 fsyncing goroutines and a committer: %d crash points checked (%d with a log replayed); fsyncs: %d logged, %d committed instead, %d already in the log; %d commits meanwhile; %v",
		tot.workloads.Load(), tot.points.Load(), tot.replayed.Load(), tot.logged.Load(), tot.commit.Load(), tot.inLog.Load(),
		tot.commits.Load(), time.Since(start).Round(time.Millisecond))
	if tot.failures.Load() == 0 && tot.logged.Load() == 0 {
		t.Error("no fsync was logged")
	}
}
