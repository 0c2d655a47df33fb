package fusefs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ustore/client"
	"ustore/fusefs"
)

// TestMount_RenameAtomic: a writer replaces f over and over by writing a
// new file and renaming it over f; a reader opening and reading f at the
// same time always finds it, whole, in one version or the other — never
// missing, never a mix (rename(2)'s promise).
func TestMount_RenameAtomic(t *testing.T) {
	mnt := mountStore(t, fusefs.Options{})
	f := filepath.Join(mnt, "f")
	versions := [2][]byte{bytes.Repeat([]byte("A"), 9000), bytes.Repeat([]byte("B"), 5000)}
	if err := os.WriteFile(f, versions[0], 0o644); err != nil {
		t.Fatal(err)
	}
	const renames = 300
	var done atomic.Bool
	var reads atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for !done.Load() {
				got, err := os.ReadFile(f)
				if err != nil {
					t.Errorf("read during renames: %v", err)
					return
				}
				if !bytes.Equal(got, versions[0]) && !bytes.Equal(got, versions[1]) {
					t.Errorf("read %d bytes, neither version (%.20q...)", len(got), got)
					return
				}
				reads.Add(1)
			}
		})
	}
	for i := range renames {
		tmp := filepath.Join(mnt, fmt.Sprintf("tmp%d", i))
		if err := os.WriteFile(tmp, versions[i%2], 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, f); err != nil {
			t.Fatal(err)
		}
	}
	done.Store(true)
	wg.Wait()
	t.Logf("%d renames, %d reads", renames, reads.Load())
}

// TestMount_UnlinkedOpen_Freed: a file unlinked while open through the
// mount is gone for every other client at once, while the mount's
// descriptors still read and write it and its space stays taken; the
// last close frees it (the mount's hold on the server goes).
func TestMount_UnlinkedOpen_Freed(t *testing.T) {
	mnt, c := mountStoreClient(t, fusefs.Options{})
	ctx := context.Background()
	used := func() uint64 {
		t.Helper()
		if err := c.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		f, err := c.StatFS(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return f.Blocks - f.BlocksFree
	}
	empty := used()
	f := filepath.Join(mnt, "f")
	data := bytes.Repeat([]byte("data"), 1<<18) // 1 MiB
	if err := os.WriteFile(f, data, 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := c.Lookup(ctx, client.RootIno, "f")
	if err != nil {
		t.Fatal(err)
	}
	fds := make([]*os.File, 2)
	for i := range fds {
		if fds[i], err = os.OpenFile(f, os.O_RDWR, 0); err != nil {
			t.Fatal(err)
		}
		defer fds[i].Close() // on a failure; closed below otherwise
	}
	if err := os.Remove(f); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Lookup(ctx, client.RootIno, "f"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("another client's lookup after the unlink: %v, want ENOENT", err)
	}
	if es, err := os.ReadDir(mnt); err != nil || len(es) != 0 {
		t.Errorf("the mount's root lists %v (%v), want nothing", es, err)
	}
	if _, err := fds[0].WriteAt([]byte("more"), int64(len(data))); err != nil {
		t.Fatalf("write to the unlinked file: %v", err)
	}
	got := make([]byte, len(data)+4)
	if n, err := fds[1].ReadAt(got, 0); n != len(got) || !bytes.Equal(got[:len(data)], data) || string(got[len(data):]) != "more" {
		t.Fatalf("read of the unlinked file: %d bytes, %v", n, err)
	}
	if st, err := fds[1].Stat(); err != nil || st.Size() != int64(len(got)) {
		t.Fatalf("fstat of the unlinked file: %v, %v", st, err)
	}
	if u := used(); u < empty+uint64(len(data))/4096 {
		t.Fatalf("%d blocks used while open, %d before the file", u, empty)
	}
	fds[0].Close()
	if _, err := c.Stat(ctx, a.Ino); err != nil {
		t.Fatalf("the unlinked file with one descriptor left: %v", err)
	}
	fds[1].Close()
	// The release reaches the mount after close returns: the kernel sends
	// it asynchronously. Wait for the inode to go, as a program would see
	// its space come back.
	for i := 0; ; i++ {
		_, err := c.Stat(ctx, a.Ino)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if i == 1000 {
			t.Fatalf("the unlinked file outlived its last close: stat %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if u := used(); u > empty+2 {
		t.Fatalf("after the last close %d blocks used, %d before the file", u, empty)
	}
}

// TestMount_RenamedOver_Freed: a file renamed over stays held until the
// kernel forgets it (open_files.go's pin), then it is freed.
func TestMount_RenamedOver_Freed(t *testing.T) {
	mnt, c := mountStoreClient(t, fusefs.Options{})
	ctx := context.Background()
	for _, name := range []string{"old", "new"} {
		if err := os.WriteFile(filepath.Join(mnt, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old, err := c.Lookup(ctx, client.RootIno, "old")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(mnt, "new"), filepath.Join(mnt, "old")); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(mnt, "old")); err != nil || string(got) != "new" {
		t.Fatalf("after the rename: %q %v", got, err)
	}
	// The kernel forgets the replaced inode once its dentry is gone:
	// asynchronously, so wait for it as a program would see it.
	for i := 0; ; i++ {
		_, err := c.Stat(ctx, old.Ino)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if i == 1000 {
			t.Fatalf("the renamed-over file outlived the kernel's inode: stat %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestMount_ReaddirConcurrent: while other names come and go, a listing
// sees every name that existed throughout exactly once, and no name
// twice.
func TestMount_ReaddirConcurrent(t *testing.T) {
	mnt := mountStore(t, fusefs.Options{})
	dir := filepath.Join(mnt, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const stable = 400 // several kernel readdir buffers, several store batches
	for i := range stable {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("stable%03d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; !done.Load(); i++ {
			p := filepath.Join(dir, fmt.Sprintf("churn%d", i))
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Error(err)
				return
			}
			if i%2 == 0 {
				if err := os.Remove(p); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	for range 20 {
		es, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		n := 0
		for _, e := range es {
			if seen[e.Name()] {
				t.Errorf("%s listed twice", e.Name())
			}
			seen[e.Name()] = true
			var k int
			if _, err := fmt.Sscanf(e.Name(), "stable%03d", &k); err == nil {
				n++
			}
		}
		if n != stable {
			t.Errorf("listed %d of the %d names that existed throughout", n, stable)
		}
	}
	done.Store(true)
	wg.Wait()
}

// TestMount_AppendConcurrent: writers appending records through their
// own O_APPEND descriptors never overwrite one another: the file ends as
// long as all records, each one whole.
func TestMount_AppendConcurrent(t *testing.T) {
	mnt := mountStore(t, fusefs.Options{})
	f := filepath.Join(mnt, "log")
	const writers, records, size = 4, 100, 100
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			fd, err := os.OpenFile(f, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
			if err != nil {
				t.Error(err)
				return
			}
			defer fd.Close()
			rec := bytes.Repeat([]byte{byte('a' + w)}, size)
			rec[size-1] = '\n'
			for range records {
				if _, err := fd.Write(rec); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	got, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != writers*records*size {
		t.Fatalf("size %d, want %d", len(got), writers*records*size)
	}
	count := map[byte]int{}
	for off := 0; off < len(got); off += size {
		rec := got[off : off+size]
		if !bytes.Equal(rec[:size-1], bytes.Repeat(rec[:1], size-1)) || rec[size-1] != '\n' {
			t.Fatalf("record at %d mixed: %q", off, rec)
		}
		count[rec[0]]++
	}
	for w := range writers {
		if count[byte('a'+w)] != records {
			t.Errorf("writer %d: %d records, want %d", w, count[byte('a'+w)], records)
		}
	}
}
