package store

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"math/rand/v2"
	"syscall"
	"testing"
)

func TestStore_Smoke(t *testing.T) {
	d := newTestDevice(t, 64<<20)
	s := openTest(t, d, Options{})
	ctx := context.Background()
	dir, err := s.Mkdir(RootIno, "d", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.Create(dir.Ino, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 3<<20+123)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if _, err := s.Write(f.Ino, 0, data); err != nil {
		t.Fatal(err)
	}
	small, _ := s.Create(RootIno, "small", 0o644)
	if _, err := s.Write(small.Ino, 0, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := s.Fsync(ctx, f.Ino, false); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get("/d/f")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get: %v, equal %v", err, bytes.Equal(got, data))
	}
	if _, err := s.Create(dir.Ino, "f", 0o644); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("create twice: %v", err)
	}
	closeCheck(t, s)

	s = openTest(t, d, Options{})
	got, err = s.Get("/d/f")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("after remount: %v, equal %v", err, bytes.Equal(got, data))
	}
	got, err = s.Get("/small")
	if err != nil || string(got) != "hello" {
		t.Fatalf("small after remount: %q %v", got, err)
	}
	// Overwrite the middle, truncate, rename, unlink.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		off := rng.IntN(len(data) - 10000)
		n := rng.IntN(10000)
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		copy(data[off:], b)
		if _, err := s.Write(f.Ino, uint64(off), b); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	if err := s.Truncate(f.Ino, 5000); err != nil {
		t.Fatal(err)
	}
	if err := s.Truncate(f.Ino, 9000); err != nil {
		t.Fatal(err)
	}
	want := append(append([]byte{}, data[:5000]...), make([]byte, 4000)...)
	got, _ = s.Get("/d/f")
	if !bytes.Equal(got, want) {
		t.Fatal("truncate down and up")
	}
	if err := s.Rename(dir.Ino, "f", RootIno, "g"); err != nil {
		t.Fatal(err)
	}
	if err := s.Rmdir(RootIno, "d"); err != nil {
		t.Fatal(err)
	}
	if err := s.Unlink(RootIno, "g"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve("/g"); !errors.Is(err, syscall.ENOENT) {
		t.Fatal(err)
	}
	closeCheck(t, s)
}
