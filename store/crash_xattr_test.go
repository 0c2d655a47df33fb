package store

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"ustore/dev/memdev"
)

// TestCrash_Xattrs cuts power at every device write and flush of random
// workloads of extended attribute changes (set, create, replace, remove,
// on three committed files, names that share a hash among them) with
// fsyncs, as TestCrash_Workloads does for the namespace: after each cut
// the store mounts, replays and checks clean, and every file's attributes
// are one of the sets it passed through since its last fsync that had
// returned — exactly that fsync's set unless a later change's write may
// have reached the device. USTORE_CRASH_SEED replays a seed.
func TestCrash_Xattrs(t *testing.T) {
	seed := uint64(20261201)
	if v, err := strconv.ParseUint(os.Getenv("USTORE_CRASH_SEED"), 10, 64); err == nil {
		seed = v
	}
	ca, cb := xattrCollision(t)
	names := []string{"user.a", "user.b", ca, cb, "user." + strings.Repeat("l", 200)}
	base, files := crashXattrBase(t)
	rng := rand.New(rand.NewPCG(seed, 3))
	cases := 0
	for w := range 12 {
		r, err := crashXattrRun(base, files, names, rng, 14)
		if err != nil {
			t.Fatalf("seed %d workload %d: %v", seed, w, err)
		}
		for _, p := range (&crashRun{d: r.d, start: r.start, end: r.end}).crashPoints(rand.New(rand.NewPCG(seed, uint64(w)))) {
			cases++
			if err := r.check(files, p); err != nil {
				t.Fatalf("seed %d workload %d (%s): crash at %v (op starts %v, fsyncs done %v): %v",
					seed, w, r.log, p, r.opStart, r.fsyncDone, err)
			}
		}
	}
	t.Logf("seed %d: 12 workloads, %d crash points checked", seed, cases)
}

// crashXattrBase makes three files, the first two with attributes,
// committed.
func crashXattrBase(t *testing.T) (*memdev.Device, []Ino) {
	d := newTestDevice(t, 32<<20)
	s, err := Open(d, crashOptions())
	if err != nil {
		t.Fatal(err)
	}
	var files []Ino
	for i := range 3 {
		a, err := s.Create(RootIno, fmt.Sprintf("f%d", i), 0o644)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, a.Ino)
	}
	for i, ino := range files[:2] {
		if err := s.SetXattr(ino, "user.a", []byte(fmt.Sprintf("base%d", i)), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return d, files
}

// crashXattrRunState is one run: the history of each file's attribute set
// (hist[f][i]: after step i, 0 the base), each step's first device
// sequence number, and for each file the fsyncs that returned (step and
// the device sequence number then).
type crashXattrRunState struct {
	d          *memdev.Device
	start, end uint64
	hist       map[Ino][]map[string]string
	opStart    []uint64 // opStart[i]: before step i+1
	fsyncDone  map[Ino][][2]uint64
	log        string
}

func crashXattrRun(base *memdev.Device, files []Ino, names []string, rng *rand.Rand, steps int) (*crashXattrRunState, error) {
	ctx := context.Background()
	d := base.Crash(memdev.KeepNone())
	s, err := Open(d, crashOptions())
	if err != nil {
		return nil, err
	}
	defer s.Close(ctx)
	r := &crashXattrRunState{d: d, start: d.Seq(), hist: map[Ino][]map[string]string{}, fsyncDone: map[Ino][][2]uint64{}}
	cur := map[Ino]map[string]string{}
	for i, ino := range files {
		cur[ino] = map[string]string{}
		if i < 2 {
			cur[ino]["user.a"] = fmt.Sprintf("base%d", i)
		}
		r.hist[ino] = []map[string]string{maps.Clone(cur[ino])}
	}
	var log []string
	for step := 1; step <= steps; step++ {
		r.opStart = append(r.opStart, d.Seq())
		ino := files[rng.IntN(len(files))]
		name := names[rng.IntN(len(names))]
		m := cur[ino]
		_, has := m[name]
		val := fmt.Sprintf("s%d", step)
		if rng.IntN(4) == 0 {
			val = strings.Repeat(val, 60)
		}
		switch k := rng.IntN(4); {
		case has && k == 0:
			err = s.RemoveXattr(ino, name)
			delete(m, name)
			log = append(log, fmt.Sprintf("rm %d %s", ino, name))
		case has && k == 1:
			err = s.SetXattr(ino, name, []byte(val), XattrReplace)
			m[name] = val
			log = append(log, fmt.Sprintf("replace %d %s", ino, name))
		case !has && k == 1:
			err = s.SetXattr(ino, name, []byte(val), XattrCreate)
			m[name] = val
			log = append(log, fmt.Sprintf("create %d %s", ino, name))
		default:
			err = s.SetXattr(ino, name, []byte(val), 0)
			m[name] = val
			log = append(log, fmt.Sprintf("set %d %s", ino, name))
		}
		if err != nil {
			return nil, fmt.Errorf("step %d (%s): %w", step, log[len(log)-1], err)
		}
		for _, f := range files {
			r.hist[f] = append(r.hist[f], maps.Clone(cur[f]))
		}
		if rng.IntN(2) == 0 {
			f := files[rng.IntN(len(files))]
			if err := s.Fsync(ctx, f, false); err != nil {
				return nil, fmt.Errorf("step %d: fsync %d: %w", step, f, err)
			}
			r.fsyncDone[f] = append(r.fsyncDone[f], [2]uint64{uint64(step), d.Seq()})
			log = append(log, fmt.Sprintf("fsync %d", f))
		}
	}
	r.end = d.Seq()
	r.log = strings.Join(log, "; ")
	return r, nil
}

func (r *crashXattrRunState) check(files []Ino, p crashPoint) error {
	crashed := r.d.CrashAt(p.seq, p.policy(r.d))
	s, err := Open(crashed, crashOptions())
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer s.Close(context.Background())
	if err := s.Check(); err != nil {
		return fmt.Errorf("fsck: %w", err)
	}
	// last: the last step whose change may have reached the device.
	last := 0
	for i, seq := range r.opStart {
		if seq < p.seq {
			last = i + 1
		}
	}
	for _, ino := range files {
		from := 0 // the base is committed
		for _, fd := range r.fsyncDone[ino] {
			if fd[1] <= p.seq {
				from = int(fd[0])
			}
		}
		names, err := s.ListXattr(ino)
		if err != nil {
			return fmt.Errorf("inode %d: %w", ino, err)
		}
		got := map[string]string{}
		for _, n := range names {
			v, err := s.GetXattr(ino, n)
			if err != nil {
				return fmt.Errorf("inode %d: get %q: %w", ino, n, err)
			}
			got[n] = string(v)
		}
		ok := false
		for _, h := range r.hist[ino][from : max(from, last)+1] {
			ok = ok || maps.Equal(h, got)
		}
		if !ok {
			return fmt.Errorf("inode %d: attributes %v, not a set of steps %d..%d (the fsync's: %v)",
				ino, slices.Sorted(maps.Keys(got)), from, max(from, last), r.hist[ino][from])
		}
	}
	return nil
}
