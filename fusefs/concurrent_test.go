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

// TestMount_UnlinkedOpen_Freed: a file unlinked while open keeps a
// hidden name only until its last close; the hidden directory is never
// listed or found through the mount.
func TestMount_UnlinkedOpen_Freed(t *testing.T) {
	mnt, c := mountStoreClient(t, fusefs.Options{})
	ctx := context.Background()
	f := filepath.Join(mnt, "f")
	if err := os.WriteFile(f, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	fds := make([]*os.File, 2)
	for i := range fds {
		var err error
		if fds[i], err = os.Open(f); err != nil {
			t.Fatal(err)
		}
		defer fds[i].Close() // on a failure; closed below otherwise
	}
	if err := os.Remove(f); err != nil {
		t.Fatal(err)
	}
	hidden, err := c.Lookup(ctx, client.RootIno, ".ustore-unlinked")
	if err != nil {
		t.Fatalf("the hidden directory: %v", err)
	}
	listHidden := func() int {
		es, err := c.ReadDir(ctx, hidden.Ino, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(es)
	}
	if n := listHidden(); n != 1 {
		t.Fatalf("%d hidden names while open, want 1", n)
	}
	if es, err := os.ReadDir(mnt); err != nil || len(es) != 0 {
		t.Errorf("the mount's root lists %v (%v), want nothing", es, err)
	}
	if _, err := os.Stat(filepath.Join(mnt, ".ustore-unlinked")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stat of the hidden directory: %v, want ENOENT", err)
	}
	fds[0].Close()
	if n := listHidden(); n != 1 {
		t.Fatalf("%d hidden names with one descriptor left, want 1", n)
	}
	fds[1].Close()
	// The release reaches the mount after close returns: the kernel sends
	// it asynchronously. A sync of the mount waits for nothing of it, so
	// wait for the name to go, as a program would see it.
	for i := 0; listHidden() != 0; i++ {
		if i == 1000 {
			t.Fatal("the hidden name outlived the last close")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestMount_RenamedOver_Freed: a file renamed over keeps a hidden name
// until the kernel forgets it (open_files.go's forget pin), then its
// space goes.
func TestMount_RenamedOver_Freed(t *testing.T) {
	mnt, c := mountStoreClient(t, fusefs.Options{})
	ctx := context.Background()
	for _, name := range []string{"old", "new"} {
		if err := os.WriteFile(filepath.Join(mnt, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(filepath.Join(mnt, "new"), filepath.Join(mnt, "old")); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(mnt, "old")); err != nil || string(got) != "new" {
		t.Fatalf("after the rename: %q %v", got, err)
	}
	hidden, err := c.Lookup(ctx, client.RootIno, ".ustore-unlinked")
	if err != nil {
		t.Fatalf("the hidden directory: %v", err)
	}
	// The kernel forgets the replaced inode once its dentry is gone:
	// asynchronously, so wait for it as a program would see it.
	for i := 0; ; i++ {
		es, err := c.ReadDir(ctx, hidden.Ino, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) == 0 {
			break
		}
		if i == 1000 {
			t.Fatalf("the renamed-over file's hidden name outlived the kernel's inode: %v", es)
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
