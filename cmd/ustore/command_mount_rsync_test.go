package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rsyncFile is one file of the tree TestMount_Rsync copies: its mode
// (setuid, setgid and sticky included), owner, modification time to the
// nanosecond, size, and the earlier files it is a hard link of.
type rsyncFile struct {
	path     string
	mode     uint32 // permission and special bits, as chmod(2) takes them
	uid, gid int
	mtime    time.Time
	size     int
	linkOf   string // "": a file of its own; else another name of that file
}

// rsyncDirs come first (parents before children), and get their times
// last, after their entries are made.
var rsyncDirs = []rsyncFile{
	{path: "a", mode: 0o755, uid: 0, gid: 0, mtime: time.Unix(1_600_000_000, 123_456_789)},
	{path: "a/b", mode: 0o700, uid: 1234, gid: 5678, mtime: time.Unix(1_700_000_001, 1)},
	{path: "c", mode: 0o1777, uid: 65534, gid: 65534, mtime: time.Unix(1_000_000_000, 999_999_999)},
	{path: "c/d", mode: 0o2750, uid: 1000, gid: 1000, mtime: time.Unix(4_102_444_800, 500)}, // 2100
}

var rsyncFiles = []rsyncFile{
	{path: "empty", mode: 0o644, mtime: time.Unix(1_500_000_000, 42), size: 0},
	{path: "one", mode: 0o600, uid: 1000, gid: 1000, mtime: time.Unix(1_500_000_001, 1), size: 1},
	{path: "a/block-1", mode: 0o640, uid: 0, gid: 1000, mtime: time.Unix(1_500_000_002, 999_999_999), size: 4095},
	{path: "a/block", mode: 0o755, uid: 1234, gid: 0, mtime: time.Unix(1_500_000_003, 100_000_001), size: 4096},
	{path: "a/block+1", mode: 0o444, uid: 5, gid: 6, mtime: time.Unix(1_500_000_004, 7), size: 4097},
	{path: "a/b/setuid", mode: 0o4755, uid: 0, gid: 0, mtime: time.Unix(1_500_000_005, 5), size: 70_001},
	{path: "a/b/setgid", mode: 0o2711, uid: 1000, gid: 50, mtime: time.Unix(1_500_000_006, 6), size: 12_345},
	{path: "c/both", mode: 0o6750, uid: 42, gid: 43, mtime: time.Unix(1_500_000_007, 8), size: 1<<20 + 3},
	{path: "c/d/none", mode: 0o000, uid: 7, gid: 7, mtime: time.Unix(1_500_000_008, 9), size: 333},
	{path: "c/d/large", mode: 0o664, uid: 1000, gid: 1000, mtime: time.Unix(1_500_000_009, 10), size: 3<<20 + 4097},
	// Hard-link groups: three names of one file across directories, and
	// two of another.
	{path: "a/linked", mode: 0o4750, uid: 1000, gid: 1000, mtime: time.Unix(1_500_000_010, 11), size: 9000},
	{path: "c/linked-2", linkOf: "a/linked"},
	{path: "a/b/linked-3", linkOf: "a/linked"},
	{path: "pair", mode: 0o600, uid: 2, gid: 3, mtime: time.Unix(1_500_000_011, 12), size: 5000},
	{path: "c/d/pair-2", linkOf: "pair"},
}

// makeRsyncTree writes the tree under root (as root: it sets owners).
func makeRsyncTree(t *testing.T, root string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(13, 3))
	for _, d := range rsyncDirs {
		if err := os.Mkdir(filepath.Join(root, d.path), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range rsyncFiles {
		p := filepath.Join(root, f.path)
		if f.linkOf != "" {
			if err := os.Link(filepath.Join(root, f.linkOf), p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data := make([]byte, f.size)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		setAttrs(t, p, f)
	}
	for _, d := range slices.Backward(rsyncDirs) {
		setAttrs(t, filepath.Join(root, d.path), d)
	}
}

// setAttrs sets owner, then mode (a chown clears setuid and setgid),
// then times.
func setAttrs(t *testing.T, p string, f rsyncFile) {
	t.Helper()
	if err := os.Lchown(p, f.uid, f.gid); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Chmod(p, f.mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, f.mtime, f.mtime); err != nil {
		t.Fatal(err)
	}
}

// TestMount_Rsync: `rsync -aH` of a tree with every kind of mode bit,
// owners, nanosecond times and hard-link groups onto the mount, compared
// attribute by attribute and byte by byte; rsync's own checksum pass
// finds nothing to send; then the server restarted and the store
// mounted again, compared again, and copied back off the mount with
// rsync -aH and compared once more.
func TestMount_Rsync(t *testing.T) {
	notUnderRace(t)
	rsync := needTool(t, "rsync", "rsync")
	if os.Geteuid() != 0 {
		t.Skip("not root: the tree has files of other owners (CI runs as root)")
	}
	ms := newMountedStore(t)
	src := filepath.Join(t.TempDir(), "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	makeRsyncTree(t, src)
	dst := filepath.Join(ms.mnt(), "dst")
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(rsync, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("rsync %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("-aH", src+"/", dst+"/")
	compareTrees(t, src, dst)
	if out := run("-aHc", "--itemize-changes", src+"/", dst+"/"); out != "" {
		t.Errorf("rsync -c finds differences after the copy:\n%s", out)
	}
	ms.down(t)
	ms.up(t)
	compareTrees(t, src, dst)
	back := filepath.Join(t.TempDir(), "back")
	run("-aH", dst+"/", back+"/")
	compareTrees(t, src, back)
	ms.downAndFsck(t)
}

// treeEntry is what compareTrees compares of one name.
type treeEntry struct {
	mode, uid, gid uint32
	nlink          uint64
	size           int64
	mtime          syscall.Timespec
	group          string // the first name (in walk order) of its inode
	data           []byte
}

// compareTrees fails the test for every difference between the trees
// at a and b: the set of names, and for each its mode, owner, size,
// mtime to the nanosecond, link count, which names share an inode, and
// a file's bytes (a directory's size is left out: each filesystem
// counts its own).
func compareTrees(t *testing.T, a, b string) {
	t.Helper()
	ta, tb := readTree(t, a), readTree(t, b)
	for name, ea := range ta {
		eb, ok := tb[name]
		if !ok {
			t.Errorf("%s: in %s, missing from %s", name, a, b)
			continue
		}
		if got, want := fmt.Sprintf("mode %o uid %d gid %d nlink %d size %d mtime %d.%09d links with %q",
			eb.mode, eb.uid, eb.gid, eb.nlink, eb.size, eb.mtime.Sec, eb.mtime.Nsec, eb.group),
			fmt.Sprintf("mode %o uid %d gid %d nlink %d size %d mtime %d.%09d links with %q",
				ea.mode, ea.uid, ea.gid, ea.nlink, ea.size, ea.mtime.Sec, ea.mtime.Nsec, ea.group); got != want {
			t.Errorf("%s in %s:\n got %s\nwant %s", name, b, got, want)
		}
		if !bytes.Equal(ea.data, eb.data) {
			t.Errorf("%s in %s: content differs (%d bytes, want %d)", name, b, len(eb.data), len(ea.data))
		}
	}
	for name := range tb {
		if _, ok := ta[name]; !ok {
			t.Errorf("%s: in %s, not in %s", name, b, a)
		}
	}
}

// readTree reads every name under root but root itself.
func readTree(t *testing.T, root string) map[string]treeEntry {
	t.Helper()
	tree := map[string]treeEntry{}
	firstName := map[uint64]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		name, _ := filepath.Rel(root, p)
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		e := treeEntry{mode: st.Mode, uid: st.Uid, gid: st.Gid, nlink: st.Nlink, size: st.Size, mtime: st.Mtim}
		if d.IsDir() {
			e.size = 0 // a directory's size is each filesystem's own
		} else {
			if first, ok := firstName[st.Ino]; ok {
				e.group = first
			} else {
				firstName[st.Ino] = name
				e.group = name
			}
			if e.data, err = os.ReadFile(p); err != nil {
				return err
			}
		}
		tree[name] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}
