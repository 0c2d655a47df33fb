package server

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"strings"
	"syscall"
	"testing"

	"ustore/client"
	"ustore/proto"
	"ustore/store"
)

// TestServer_NameItemFull_OthersKeepServing is issue 14's first attack
// through the socket: one client fills an inode's INODE_REF with hard
// links of 255-byte names, and a directory's hash chain with names that
// share a crc32c. Each is refused (EMLINK, EOVERFLOW) and another client's
// unsynced work, the server and the store go on; before the fix the store
// turned read-only for everyone.
func TestServer_NameItemFull_OthersKeepServing(t *testing.T) {
	ts := newStoreServer(t)
	ctx := context.Background()
	victim, attacker := dial(t, ts.sock), dial(t, ts.sock)
	keep, err := victim.Create(ctx, client.RootIno, "keep", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := victim.Write(ctx, keep.Ino, 0, []byte("acknowledged, not fsynced")); err != nil {
		t.Fatal(err)
	}

	d, err := attacker.Mkdir(ctx, client.RootIno, "d", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	long := func(i int) string { return fmt.Sprintf("%0255d", i) }
	f, err := attacker.Create(ctx, d.Ino, long(0), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	var lerr error
	links := 1
	for ; links < 100 && lerr == nil; links++ {
		_, lerr = attacker.Link(ctx, f.Ino, d.Ino, long(links))
	}
	var se *proto.StatusError
	if !errors.Is(lerr, syscall.EMLINK) || !errors.As(lerr, &se) || se.Status != proto.StatusTooManyLinks || links-1 != 14 {
		t.Fatalf("link %d: %v, want EMLINK at the 15th name (link 14)", links-1, lerr)
	}

	cd, err := attacker.Mkdir(ctx, client.RootIno, "c", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	var cerr error
	created := 0
	for _, n := range serverCollidingNames(20) {
		if _, cerr = attacker.Create(ctx, cd.Ino, n, 0o644); cerr != nil {
			break
		}
		created++
	}
	if !errors.Is(cerr, syscall.EOVERFLOW) || !errors.As(cerr, &se) || se.Status != proto.StatusOverflow || created != 14 {
		t.Fatalf("create %d: %v, want EOVERFLOW at 15", created, cerr)
	}

	// Everyone goes on: the victim writes, creates and syncs.
	if _, err := victim.Write(ctx, keep.Ino, 100, []byte("more")); err != nil {
		t.Fatalf("write after the attack: %v", err)
	}
	if _, err := victim.Create(ctx, client.RootIno, "after", 0o644); err != nil {
		t.Fatalf("create after the attack: %v", err)
	}
	if err := victim.Sync(ctx); err != nil {
		t.Fatalf("sync after the attack: %v", err)
	}
	if err := ts.st.Check(); err != nil {
		t.Fatalf("fsck: %v", err)
	}
}

// TestServer_SetAttr_TimesClamped_FsyncDeleted: issue 14's smaller store
// items through the socket: an atime of −2^63 comes back clamped to the
// store's range, and fsync of a deleted inode is ENOENT as stat is.
func TestServer_SetAttr_TimesClamped_FsyncDeleted(t *testing.T) {
	ts := newStoreServer(t)
	c := dial(t, ts.sock)
	ctx := context.Background()
	f, err := c.Create(ctx, client.RootIno, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.SetAttr(ctx, f.Ino, proto.SetAttr{Mask: proto.SetAtime | proto.SetMtime,
		Atime: proto.Timespec{Sec: math.MinInt64}, Mtime: proto.Timespec{Sec: math.MaxInt64, Nsec: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Atime != (proto.Timespec{Sec: store.TimeSecMin}) || a.Mtime != (proto.Timespec{Sec: store.TimeSecMax}) {
		t.Fatalf("atime %+v mtime %+v, want [%d, %d]", a.Atime, a.Mtime, store.TimeSecMin, store.TimeSecMax)
	}
	if err := c.Unlink(ctx, client.RootIno, "f"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stat(ctx, f.Ino); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("stat of the deleted file: %v", err)
	}
	if err := c.Fsync(ctx, f.Ino, false); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("fsync of the deleted file: %v, want ENOENT as stat", err)
	}
}

// serverCollidingNames returns n distinct 255-byte names with one crc32c
// (one DIR_ITEM): the crc of a fixed-length message is affine in its
// bits, so the 4 last bytes that give a target are a 32×32 solve over
// GF(2). store/name_room_test.go has the same; test helpers do not cross
// packages.
func serverCollidingNames(n int) []string {
	tab := crc32.MakeTable(crc32.Castagnoli)
	first := strings.Repeat("0", 255)
	target := crc32.Checksum([]byte(first), tab)
	out := []string{first}
	for i := 1; len(out) < n; i++ {
		buf := []byte(fmt.Sprintf("%0251d", i) + "\x00\x00\x00\x00")
		base := crc32.Checksum(buf, tab)
		var basis, combo [32]uint32
		var has [32]bool
		for j := range 32 {
			buf[251+j/8] = 1 << (j % 8)
			v, c := crc32.Checksum(buf, tab)^base, uint32(1)<<j
			buf[251+j/8] = 0
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
		v, x, ok := target^base, uint32(0), true
		for b := 31; b >= 0 && ok; b-- {
			if v>>b&1 != 0 {
				ok = has[b]
				v, x = v^basis[b], x^combo[b]
			}
		}
		for k := range 4 {
			buf[251+k] = byte(x >> (8 * k))
		}
		if ok && !strings.ContainsAny(string(buf), "/\x00") {
			out = append(out, string(buf))
		}
	}
	return out
}
