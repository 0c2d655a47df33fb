package store

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"ustore/dev/memdev"
)

// The crash tests of renameat2's exchange and of fallocate: a few steps,
// each an operation and an fsync, on the starting tree of crash_test.go;
// power is cut at every flush and after every write (crashPoints), and the
// mounted store must be fsck clean and in the state of the last fsync that
// had returned before the cut — or of a later step (a commit may make more
// durable than asked), never a mix of two.

// crashStepRun is a run of steps: the device and, per step, when its fsync
// had returned (the device's sequence number).
type crashStepRun struct {
	d           *memdev.Device
	start, end  uint64
	fsyncReturn []uint64
}

// runCrashSteps runs steps on a copy of base; step i's function makes its
// change and its fsync.
func runCrashSteps(t *testing.T, base *memdev.Device, steps []func(s *Store) error) *crashStepRun {
	t.Helper()
	d := base.Crash(memdev.KeepNone())
	s, err := Open(d, crashOptions())
	if err != nil {
		t.Fatal(err)
	}
	r := &crashStepRun{d: d, start: d.Seq()}
	for i, step := range steps {
		if err := step(s); err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
		r.fsyncReturn = append(r.fsyncReturn, d.Seq())
	}
	r.end = d.Seq()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return r
}

// check cuts the power at every crash point, mounts, runs fsck, and asks
// state which step's state the store is in (0: the start; -1: none). It
// must be at least the last step whose fsync had returned.
func (r *crashStepRun) check(t *testing.T, seed uint64, state func(s *Store) (int, string)) {
	t.Helper()
	cr := &crashRun{d: r.d, start: r.start, end: r.end}
	pts := cr.crashPoints(rand.New(rand.NewPCG(seed, 7)))
	for _, p := range pts {
		durable := 0
		for i, seq := range r.fsyncReturn {
			if p.seq >= seq {
				durable = i + 1
			}
		}
		s, err := Open(r.d.CrashAt(p.seq, p.policy(r.d)), crashOptions())
		if err != nil {
			t.Fatalf("%v: open: %v", p, err)
		}
		if err := s.Check(); err != nil {
			t.Fatalf("%v: fsck: %v", p, err)
		}
		got, why := state(s)
		if got < durable {
			t.Fatalf("%v: the store is in step %d's state (%s), but step %d's fsync had returned", p, got, why, durable)
		}
		if err := s.Close(context.Background()); err != nil {
			t.Fatalf("%v: close: %v", p, err)
		}
	}
	t.Logf("%d crash points", len(pts))
}

// readPath reads the file at p whole.
func readPath(s *Store, p string) ([]byte, Attr, error) {
	a, err := s.Resolve(p)
	if err != nil {
		return nil, a, err
	}
	buf := make([]byte, a.Size+1)
	n, err := s.Read(a.Ino, 0, buf)
	return buf[:n], a, err
}

// TestCrash_ExchangeFsync: /A (a file) and /D (a directory holding C)
// exchange, then fsync of the file; a write to the file at its new name
// and the exchange back, then fsync of /. Each cut shows the names all
// before an exchange or all after it, with the directory's '..' and
// contents whole.
func TestCrash_ExchangeFsync(t *testing.T) {
	base, m0 := crashBase(t)
	aIno, dIno := m0.entry(RootIno, "A"), m0.entry(RootIno, "D")
	oldA := m0[aIno].data
	newA := append(bytes.Clone(oldA), crashData(5, len(oldA), 3000)...)
	cData := m0[m0.entry(dIno, "C")].data
	steps := []func(s *Store) error{
		func(s *Store) error {
			if err := s.Rename2(RootIno, "A", RootIno, "D", RenameExchange); err != nil {
				return err
			}
			return s.Fsync(context.Background(), aIno, false)
		},
		func(s *Store) error {
			if _, err := s.Write(aIno, uint64(len(oldA)), newA[len(oldA):]); err != nil {
				return err
			}
			if err := s.Fsync(context.Background(), aIno, false); err != nil {
				return err
			}
			if err := s.Rename2(RootIno, "D", RootIno, "A", RenameExchange); err != nil {
				return err
			}
			return s.Fsync(context.Background(), RootIno, false)
		},
	}
	r := runCrashSteps(t, base, steps)
	r.check(t, 1, func(s *Store) (int, string) {
		a, errA := s.Lookup(RootIno, "A")
		d, errD := s.Lookup(RootIno, "D")
		if errA != nil || errD != nil {
			return -1, fmt.Sprintf("lookups: %v, %v", errA, errD)
		}
		swapped := a.Ino == dIno && d.Ino == aIno
		if !swapped && (a.Ino != aIno || d.Ino != dIno) {
			return -1, fmt.Sprintf("/A is %d, /D %d", a.Ino, d.Ino)
		}
		dir, file := "/D", "/A"
		if swapped {
			dir, file = "/A", "/D"
		}
		if p, err := s.parentOf(dIno); err != nil || p != RootIno {
			return -1, fmt.Sprintf("the directory's '..' is %d (%v)", p, err)
		}
		if got, _, err := readPath(s, dir+"/C"); err != nil || !bytes.Equal(got, cData) {
			return -1, fmt.Sprintf("%s/C: %d bytes, %v", dir, len(got), err)
		}
		got, _, err := readPath(s, file)
		if err != nil {
			return -1, err.Error()
		}
		grown := bytes.Equal(got, newA)
		if !grown && !bytes.Equal(got, oldA) {
			return -1, fmt.Sprintf("the file holds %d bytes", len(got))
		}
		switch {
		case !swapped && !grown:
			return 0, "not swapped"
		case swapped:
			return 1, "swapped"
		}
		return 2, "swapped back, grown"
	})
}

// TestCrash_FallocateFsync: /A (10,000 bytes) grows to 40,000 by fallocate
// mode 0, fsync; a hole is punched over two whole blocks and two partial
// edges, fsync; a KEEP_SIZE allocation inside the size after a shrink,
// fsync. Each cut shows one step's size, content and allocated bytes.
func TestCrash_FallocateFsync(t *testing.T) {
	base, m0 := crashBase(t)
	aIno := m0.entry(RootIno, "A")
	s0 := m0[aIno].data
	s1 := append(bytes.Clone(s0), make([]byte, 40000-len(s0))...)
	s2 := bytes.Clone(s1)
	clear(s2[100:12388])
	s3 := s2[:20000]
	states := []struct {
		data   []byte
		blocks uint64
	}{{s0, 3 * blockSize}, {s1, 10 * blockSize}, {s2, 8 * blockSize}, {s3, 5 * blockSize}}
	ctx := context.Background()
	steps := []func(s *Store) error{
		func(s *Store) error {
			if _, err := s.Fallocate(aIno, 0, 0, 40000); err != nil {
				return err
			}
			return s.Fsync(ctx, aIno, false)
		},
		func(s *Store) error {
			if _, err := s.Fallocate(aIno, FallocPunchHole|FallocKeepSize, 100, 12288); err != nil {
				return err
			}
			return s.Fsync(ctx, aIno, false)
		},
		func(s *Store) error {
			// Blocks 1 and 2 are holes again; KEEP_SIZE fills them, and
			// allocates nothing past the new size.
			if err := s.Truncate(aIno, 20000); err != nil {
				return err
			}
			if _, err := s.Fallocate(aIno, FallocKeepSize, 0, 1<<20); err != nil {
				return err
			}
			return s.Fsync(ctx, aIno, true)
		},
	}
	r := runCrashSteps(t, base, steps)
	r.check(t, 2, func(s *Store) (int, string) {
		got, a, err := readPath(s, "/A")
		if err != nil {
			return -1, err.Error()
		}
		// The last state of that content (s3 is no prefix of s2: sizes).
		for i := len(states) - 1; i >= 0; i-- {
			if bytes.Equal(got, states[i].data) {
				if a.Blocks != states[i].blocks {
					return -1, fmt.Sprintf("step %d's content, %d bytes allocated (want %d)", i, a.Blocks, states[i].blocks)
				}
				return i, fmt.Sprintf("%d bytes, %d allocated", a.Size, a.Blocks)
			}
		}
		return -1, fmt.Sprintf("%d bytes (size %d, %d allocated) match no step", len(got), a.Size, a.Blocks)
	})
}
