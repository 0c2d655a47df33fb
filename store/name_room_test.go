package store

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"syscall"
	"testing"

	"ustore/dev/memdev"
	"ustore/engine"
)

// The attacks of issue 14, item 1: names that fill a list item shared by
// several names — an inode's INODE_REF in one directory (hard links), a
// hash chain's DIR_ITEM (crc32c collisions). Each must be refused with
// btrfs's errno before anything changes, and the store must go on serving,
// committing and keeping everyone else's work; before the fix each ended
// in "transaction aborted: engine: item too large" and a read-only store
// that lost every acknowledged change since the last commit.

// forgeCRC32C returns the 4 bytes that, appended to prefix, give a crc32c
// of target: the crc of a fixed-length message is affine in its bits, so
// 33 checksums and a 32×32 elimination over GF(2) find them.
func forgeCRC32C(prefix []byte, target uint32) ([4]byte, bool) {
	tab := crc32.MakeTable(crc32.Castagnoli)
	n := len(prefix)
	buf := append(append([]byte(nil), prefix...), 0, 0, 0, 0)
	base := crc32.Checksum(buf, tab)
	var basis, combo [32]uint32
	var has [32]bool
	for j := range 32 {
		buf[n+j/8] = 1 << (j % 8)
		v, c := crc32.Checksum(buf, tab)^base, uint32(1)<<j
		buf[n+j/8] = 0
		for b := 31; b >= 0; b-- {
			if v>>b&1 == 0 {
				continue
			}
			if !has[b] {
				basis[b], combo[b], has[b] = v, c, true
				break
			}
			v, c = v^basis[b], c^combo[b]
		}
	}
	v, x := target^base, uint32(0)
	for b := 31; b >= 0; b-- {
		if v>>b&1 == 0 {
			continue
		}
		if !has[b] {
			return [4]byte{}, false
		}
		v, x = v^basis[b], x^combo[b]
	}
	return [4]byte{byte(x), byte(x >> 8), byte(x >> 16), byte(x >> 24)}, true
}

// collidingNames returns n distinct valid names of size bytes (≥ 8) that
// share one crc32c, and so one DIR_ITEM in a directory.
func collidingNames(t testing.TB, n, size int) []string {
	t.Helper()
	first := fmt.Sprintf("%0*d", size, 0)
	target := crc32.Checksum([]byte(first), crc32.MakeTable(crc32.Castagnoli))
	out := []string{first}
	for i := 1; len(out) < n; i++ {
		prefix := fmt.Sprintf("%0*d", size-4, i)
		tail, ok := forgeCRC32C([]byte(prefix), target)
		name := prefix + string(tail[:])
		if !ok || checkName(name) != nil {
			continue
		}
		if nameHash(name) != nameHash(first) {
			t.Fatalf("forged %q does not collide", name)
		}
		out = append(out, name)
	}
	return out
}

// longName is a distinct name of 255 bytes.
func longName(i int) string { return fmt.Sprintf("%0*d", engine.NameMax, i) }

// roomFix is a store of the given node size with one file another client
// created and wrote, not fsynced: it must survive the attack.
type roomFix struct {
	t      *testing.T
	d      *memdev.Device
	s      *Store
	other  Ino
	before []byte
}

func newRoomFix(t *testing.T, nodeSize int) *roomFix {
	t.Helper()
	d := memdev.New(64 << 20)
	if err := Mkfs(d, MkfsOptions{NodeSize: nodeSize}); err != nil {
		t.Fatal(err)
	}
	f := &roomFix{t: t, d: d, s: openTest(t, d, Options{}), before: posixPattern(6000, 3)}
	a, err := f.s.Create(RootIno, "other", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.other = a.Ino
	posixWrite(t, f.s, f.other, 0, f.before)
	return f
}

// itemMax is how many entries of n-byte names one list item holds.
func (f *roomFix) itemMax(n int) int { return f.s.e.ItemDataMax() / engine.DirEntrySize(n) }

// serves checks that the store still serves and commits after the
// refusal, that the other client's unsynced work is kept through a clean
// unmount and a mount, and that fsck is clean.
func (f *roomFix) serves() {
	t := f.t
	t.Helper()
	if _, err := f.s.Create(RootIno, "after", 0o644); err != nil {
		t.Fatalf("create after the refusal: %v", err)
	}
	if err := f.s.Sync(context.Background()); err != nil {
		t.Fatalf("sync after the refusal: %v", err)
	}
	if err := f.s.Check(); err != nil {
		t.Fatalf("fsck: %v", err)
	}
	if err := f.s.Close(context.Background()); err != nil {
		t.Fatalf("close: %v", err)
	}
	f.s = openTest(t, f.d, Options{})
	if got := posixReadAll(t, f.s, f.other); string(got) != string(f.before) {
		t.Fatalf("the other client's file: %d bytes after remount, want %d", len(got), len(f.before))
	}
	if _, err := f.s.Lookup(RootIno, "after"); err != nil {
		t.Fatalf("after remount: %v", err)
	}
	closeCheck(t, f.s)
}

func TestNameRoom_Link_EMLINK(t *testing.T) {
	for _, c := range []struct {
		nodeSize, nameLen int
	}{{16 << 10, 255}, {16 << 10, 3}, {4 << 10, 255}} {
		t.Run(fmt.Sprintf("node%d/name%d", c.nodeSize, c.nameLen), func(t *testing.T) {
			f := newRoomFix(t, c.nodeSize)
			s := f.s
			d, err := s.Mkdir(RootIno, "d", 0o755)
			if err != nil {
				t.Fatal(err)
			}
			name := func(i int) string { return fmt.Sprintf("%0*d", c.nameLen, i) }
			fa, err := s.Create(d.Ino, name(0), 0o644)
			if err != nil {
				t.Fatal(err)
			}
			max := f.itemMax(c.nameLen)
			for i := 1; i < max; i++ {
				if _, err := s.Link(fa.Ino, d.Ino, name(i)); err != nil {
					t.Fatalf("link %d of %d: %v", i, max, err)
				}
			}
			_, err = s.Link(fa.Ino, d.Ino, name(max))
			posixWantErr(t, "the link past the item", err, syscall.EMLINK)
			// The name is not there, the link count is unchanged, and a
			// name in another directory is still fine.
			if _, err := s.Lookup(d.Ino, name(max)); !errors.Is(err, syscall.ENOENT) {
				t.Fatalf("the refused name: %v", err)
			}
			if a, _ := s.Stat(fa.Ino); a.Nlink != uint32(max) {
				t.Fatalf("nlink %d, want %d", a.Nlink, max)
			}
			if _, err := s.Link(fa.Ino, RootIno, name(max)); err != nil {
				t.Fatalf("a link elsewhere: %v", err)
			}
			// A rename into d is a new name there too; within d it first
			// removes the old one, so it fits.
			posixWantErr(t, "rename of another name into d", s.Rename(RootIno, name(max), d.Ino, name(max)), syscall.EMLINK)
			if err := s.Rename(d.Ino, name(1), d.Ino, name(max+1)); err != nil {
				t.Fatalf("rename within d: %v", err)
			}
			if s.Stats().NameItemFull != 2 {
				t.Fatalf("NameItemFull %d, want 2", s.Stats().NameItemFull)
			}
			f.serves()
		})
	}
}

func TestNameRoom_Create_EOVERFLOW(t *testing.T) {
	for _, nodeSize := range []int{16 << 10, 4 << 10} {
		t.Run(fmt.Sprintf("node%d", nodeSize), func(t *testing.T) {
			f := newRoomFix(t, nodeSize)
			s := f.s
			max := f.itemMax(engine.NameMax)
			names := collidingNames(t, max+3, engine.NameMax)
			d, err := s.Mkdir(RootIno, "d", 0o755)
			if err != nil {
				t.Fatal(err)
			}
			for i, n := range names[:max] {
				if _, err := s.Create(d.Ino, n, 0o644); err != nil {
					t.Fatalf("create %d of %d: %v", i, max, err)
				}
			}
			full := names[max]
			_, err = s.Create(d.Ino, full, 0o644)
			posixWantErr(t, "create past the chain", err, syscall.EOVERFLOW)
			_, err = s.Mkdir(d.Ino, full, 0o755)
			posixWantErr(t, "mkdir past the chain", err, syscall.EOVERFLOW)
			x, err := s.Create(RootIno, "x", 0o644)
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Link(x.Ino, d.Ino, full)
			posixWantErr(t, "link past the chain", err, syscall.EOVERFLOW)
			posixWantErr(t, "rename into the chain", s.Rename(RootIno, "x", d.Ino, full), syscall.EOVERFLOW)
			if es := posixList(t, s, d.Ino, 100); len(es) != max {
				t.Fatalf("%d entries, want %d", len(es), max)
			}
			// Renames that leave the chain as long: over a name in it,
			// and from one name of it to another.
			if err := s.Rename(RootIno, "x", d.Ino, names[0]); err != nil {
				t.Fatalf("rename over a chain member: %v", err)
			}
			if err := s.Rename(d.Ino, names[1], d.Ino, names[max+1]); err != nil {
				t.Fatalf("rename within the chain: %v", err)
			}
			// A name with another hash is fine.
			if _, err := s.Create(d.Ino, longName(7), 0o644); err != nil {
				t.Fatal(err)
			}
			f.serves()
		})
	}
}

// TestNameRoom_Replay_NoOverflow: a log replayed onto the last commit
// keeps the committed names it does not remove, so it could build a hash
// chain no running store held: here the commit's three colliding names
// (a full item at 4 KiB nodes), then two unlinked and one new name
// fsynced. Replay must not fail the mount with an item too large: the
// fsync commits (the log is stale: name_item_full).
func TestNameRoom_Replay_NoOverflow(t *testing.T) {
	f := rpNew(t, 32<<20)
	max := f.s.e.ItemDataMax() / engine.DirEntrySize(engine.NameMax)
	names := collidingNames(t, max+1, engine.NameMax)
	d := f.mkdir(RootIno, "d")
	for _, n := range names[:max] {
		f.create(d, n)
	}
	f.sync()
	for _, n := range names[:2] {
		if err := f.s.Unlink(d, n); err != nil {
			t.Fatal(err)
		}
	}
	y := f.create(d, names[max])
	f.write(y, 0, []byte("fsynced"))
	if got := f.fsync(y); !strings.HasPrefix(got, "commit") || !strings.Contains(got, "name_item_full") {
		t.Fatalf("fsync: %s, want a commit for name_item_full", got)
	}
	f.crashReplay(false)
	es := posixList(t, f.s, d, 100)
	if len(es) != max-1 {
		t.Fatalf("%d entries after the crash, want %d: %v", len(es), max-1, es)
	}
	a, err := f.s.Lookup(d, names[max])
	if err != nil {
		t.Fatal(err)
	}
	if got := posixReadAll(t, f.s, a.Ino); string(got) != "fsynced" {
		t.Fatalf("the fsynced file: %q", got)
	}
}

// TestNameRoom_Replay_LogsWithRoom: far from the limit, an unlink and a
// create of a colliding name in one transaction still log.
func TestNameRoom_Replay_LogsWithRoom(t *testing.T) {
	f := rpNew(t, 32<<20)
	names := collidingNames(t, 3, 16)
	d := f.mkdir(RootIno, "d")
	f.create(d, names[0])
	f.create(d, names[1])
	f.sync()
	if err := f.s.Unlink(d, names[0]); err != nil {
		t.Fatal(err)
	}
	y := f.create(d, names[2])
	f.fsyncLogged(y)
	f.crash()
	if _, err := f.s.Lookup(d, names[2]); err != nil {
		t.Fatal(err)
	}
}
