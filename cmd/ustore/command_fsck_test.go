package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ustore/dev/devopen"
	"ustore/engine"
	"ustore/store"
)

// withImageStore opens the image at path as a store for the duration of
// fn, and closes it (committing what fn did).
func withImageStore(t *testing.T, path string, fn func(s *store.Store)) {
	t.Helper()
	d, _, err := devopen.Open(path, devopen.Options{Backend: devopen.Syscall, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s, err := store.Open(d, store.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	fn(s)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// firstDataBlock returns the device offset of inode ino's first regular
// extent.
func firstDataBlock(t *testing.T, s *store.Store, ino store.Ino) uint64 {
	t.Helper()
	var at uint64
	err := s.Engine().Tree(engine.FSTreeID).Iterate(engine.InoKey(ino, engine.TypeExtentData, 0), func(k engine.Key, b []byte) bool {
		if k.Ino() != ino || k.Type != engine.TypeExtentData {
			return false
		}
		if x, err := engine.DecodeFileExtent(b); err == nil && x.Type == engine.ExtentRegular {
			at = uint64(x.DiskBytenr)
			return false
		}
		return true
	})
	if err != nil || at == 0 {
		t.Fatalf("no data extent for inode %d: %v", ino, err)
	}
	return at
}

// flipFileByte flips one bit of the file at path, at off.
func flipFileByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x01
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestCommand_Fsck_Data: a flipped bit in a data block leaves plain fsck
// clean (it reads no data), while fsck --data names the inode, the file
// offset and the path, reports the bytes it read and its speed, and exits
// 1.
func TestCommand_Fsck_Data(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dev.img")
	if out, err := run(t, "mkfs", "--size", "64M", "--nodesize", "4k", path); err != nil {
		t.Fatalf("mkfs: %v\n%s", err, out)
	}
	var ino store.Ino
	var disk uint64
	withImageStore(t, path, func(s *store.Store) {
		if _, err := s.Mkdir(store.RootIno, "dir", 0o755); err != nil {
			t.Fatal(err)
		}
		a, err := s.Put(context.Background(), "/dir/victim", make([]byte, 256<<10), true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(context.Background(), "/other", []byte(strings.Repeat("o", 100<<10)), true); err != nil {
			t.Fatal(err)
		}
		if err := s.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		ino, disk = a.Ino, firstDataBlock(t, s, a.Ino)
	})
	out, err := run(t, "fsck", "--data", path)
	if err != nil || !strings.Contains(out, "clean") || !strings.Contains(out, "0 bad blocks") ||
		!strings.Contains(out, fmt.Sprintf("scrubbed %d bytes", 256<<10+100<<10)) || !strings.Contains(out, "MB/s") {
		t.Fatalf("fsck --data of a clean filesystem: %v\n%s", err, out)
	}

	const blockInFile = 5
	flipFileByte(t, path, int64(disk)+blockInFile*4096+123)
	before := fileHash(t, path)
	if out, err := run(t, "fsck", path); err != nil || !strings.Contains(out, "clean") {
		t.Fatalf("plain fsck reads no data and should pass: %v\n%s", err, out)
	}
	out, err = run(t, "fsck", "--data", path)
	want := fmt.Sprintf("inode %d offset %d (device block %d) /dir/victim: ", ino, blockInFile*4096, disk+blockInFile*4096)
	if err == nil || !strings.Contains(out, want) || !strings.Contains(out, "1 bad blocks") || strings.Contains(out, "clean") {
		t.Fatalf("fsck --data with a damaged data block: %v, want a line %q\n%s", err, want, out)
	}
	if fileHash(t, path) != before {
		t.Fatal("fsck changed the image")
	}
}
