package server

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"

	"ustore/client"
	"ustore/proto"
)

// TestServer_Symlink runs ops 19 and 20 through the client: a link made,
// read back, seen by lookup and resolve as itself (lstat) and listed as
// DT_LNK; and each refusal with its errno — the store's limit (16 KiB
// nodes: 4,037 bytes) and the protocol's (PATH_MAX − 1, refused before
// sending), an empty target, a readlink of a file, a path through a link,
// a read of one.
func TestServer_Symlink(t *testing.T) {
	ts := newStoreServer(t)
	c := dial(t, ts.sock)
	ctx := context.Background()
	d, err := c.Mkdir(ctx, client.RootIno, "d", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.Create(ctx, d.Ino, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.Symlink(ctx, client.RootIno, "l", "d")
	if err != nil {
		t.Fatal(err)
	}
	if l.Mode != syscall.S_IFLNK|0o777 || l.Size != 1 || l.Nlink != 1 {
		t.Fatalf("symlink: %+v", l)
	}
	if got, err := c.Readlink(ctx, l.Ino); err != nil || got != "d" {
		t.Fatalf("readlink: %q, %v", got, err)
	}
	if a, err := c.Lookup(ctx, client.RootIno, "l"); err != nil || a.Ino != l.Ino || a.Mode != l.Mode {
		t.Fatalf("lookup: %+v, %v", a, err)
	}
	if a, err := c.Resolve(ctx, "/l"); err != nil || a.Ino != l.Ino {
		t.Fatalf("resolve: %+v, %v", a, err)
	}
	es, err := c.ReadDir(ctx, client.RootIno, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Name == "l" && e.Type != syscall.DT_LNK {
			t.Errorf("the link's entry has type %d", e.Type)
		}
	}
	max := strings.Repeat("t", 4037)
	m, err := c.Symlink(ctx, client.RootIno, "max", max)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Readlink(ctx, m.Ino); err != nil || got != max {
		t.Fatalf("readlink of the longest target: %d bytes, %v", len(got), err)
	}
	buf := make([]byte, 10)
	for _, tc := range []struct {
		name string
		call func() error
		want syscall.Errno
	}{
		{"symlink over the store's limit", func() error { _, err := c.Symlink(ctx, client.RootIno, "x", max+"t"); return err }, syscall.ENAMETOOLONG},
		{"symlink over PATH_MAX-1 (local)", func() error {
			_, err := c.Symlink(ctx, client.RootIno, "x", strings.Repeat("t", proto.SymlinkTargetMax+1))
			return err
		}, syscall.ENAMETOOLONG},
		{"symlink empty target", func() error { _, err := c.Symlink(ctx, client.RootIno, "x", ""); return err }, syscall.ENOENT},
		{"symlink existing", func() error { _, err := c.Symlink(ctx, client.RootIno, "l", "y"); return err }, syscall.EEXIST},
		{"symlink in a file", func() error { _, err := c.Symlink(ctx, f.Ino, "x", "y"); return err }, syscall.ENOTDIR},
		{"readlink a file", func() error { _, err := c.Readlink(ctx, f.Ino); return err }, syscall.EINVAL},
		{"readlink a directory", func() error { _, err := c.Readlink(ctx, d.Ino); return err }, syscall.EINVAL},
		{"readlink a never-used inode", func() error { _, err := c.Readlink(ctx, 1<<40); return err }, syscall.ENOENT},
		{"resolve through a link", func() error { _, err := c.Resolve(ctx, "/l/f"); return err }, syscall.ELOOP},
		{"get through a link", func() error { _, err := c.Get(ctx, "/l/f"); return err }, syscall.ELOOP},
		{"read a link", func() error { _, err := c.Read(ctx, l.Ino, 0, buf); return err }, syscall.EINVAL},
		{"write a link", func() error { _, err := c.Write(ctx, l.Ino, 0, buf); return err }, syscall.EINVAL},
		{"truncate a link", func() error { return c.Truncate(ctx, l.Ino, 0) }, syscall.EINVAL},
	} {
		if err := tc.call(); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// A hard link to the link, then the link's first name goes.
	if a, err := c.Link(ctx, l.Ino, d.Ino, "l2"); err != nil || a.Nlink != 2 {
		t.Fatalf("link: %+v, %v", a, err)
	}
	if err := c.Unlink(ctx, client.RootIno, "l"); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Readlink(ctx, l.Ino); err != nil || got != "d" {
		t.Fatalf("readlink by its second name: %q, %v", got, err)
	}
}
