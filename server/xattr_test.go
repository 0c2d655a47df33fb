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

// TestServer_Xattrs runs the four xattr ops through the client: flags,
// the size protocol of getxattr and listxattr (0 asks for the size, too
// small is ERANGE), namespaces, limits, and the errors as errnos.
func TestServer_Xattrs(t *testing.T) {
	ts := newStoreServer(t)
	c := dial(t, ts.sock)
	ctx := context.Background()
	f, err := c.Create(ctx, client.RootIno, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	is := func(what string, err error, want syscall.Errno) {
		t.Helper()
		if want == 0 && err != nil || want != 0 && !errors.Is(err, want) {
			t.Fatalf("%s: %v, want %v", what, err, want)
		}
	}
	is("set", c.SetXattr(ctx, f.Ino, "user.mime", []byte("text/plain"), client.XattrCreate), 0)
	is("create again", c.SetXattr(ctx, f.Ino, "user.mime", []byte("x"), client.XattrCreate), syscall.EEXIST)
	is("replace absent", c.SetXattr(ctx, f.Ino, "user.none", []byte("x"), client.XattrReplace), syscall.ENODATA)
	is("set empty value", c.SetXattr(ctx, f.Ino, "user.empty", nil, 0), 0)
	is("other namespace", c.SetXattr(ctx, f.Ino, "trusted.a", []byte("x"), 0), syscall.EOPNOTSUPP)
	is("unknown flag", c.SetXattr(ctx, f.Ino, "user.a", nil, 4), syscall.EINVAL)
	is("value past 64 KiB", c.SetXattr(ctx, f.Ino, "user.a", make([]byte, proto.XattrSizeMax+1), 0), syscall.E2BIG)
	is("value past the item", c.SetXattr(ctx, f.Ino, "user.a", make([]byte, proto.XattrSizeMax), 0), syscall.ENOSPC)
	is("name past 255", c.SetXattr(ctx, f.Ino, "user."+strings.Repeat("n", 251), nil, 0), syscall.ERANGE)

	r, err := c.GetXattr(ctx, f.Ino, "user.mime", 0)
	if err != nil || r.Size != 10 || len(r.Data) != 0 {
		t.Fatalf("getxattr size 0: %+v %v", r, err)
	}
	_, err = c.GetXattr(ctx, f.Ino, "user.mime", 9)
	is("getxattr into 9 bytes", err, syscall.ERANGE)
	r, err = c.GetXattr(ctx, f.Ino, "user.mime", 10)
	if err != nil || string(r.Data) != "text/plain" {
		t.Fatalf("getxattr: %+v %v", r, err)
	}
	r, err = c.GetXattr(ctx, f.Ino, "user.empty", 100)
	if err != nil || r.Size != 0 || len(r.Data) != 0 {
		t.Fatalf("getxattr of an empty value: %+v %v", r, err)
	}
	_, err = c.GetXattr(ctx, f.Ino, "user.none", 100)
	is("getxattr absent", err, syscall.ENODATA)
	_, err = c.GetXattr(ctx, f.Ino, "security.capability", 100)
	is("getxattr other namespace", err, syscall.ENODATA)
	_, err = c.GetXattr(ctx, f.Ino+1000, "user.mime", 100)
	is("getxattr no inode", err, syscall.ENOENT)

	want := "user.mime\x00user.empty\x00"
	r, err = c.ListXattr(ctx, f.Ino, 0)
	if err != nil || int(r.Size) != len(want) || len(r.Data) != 0 {
		t.Fatalf("listxattr size 0: %+v %v", r, err)
	}
	_, err = c.ListXattr(ctx, f.Ino, uint32(len(want)-1))
	is("listxattr too small", err, syscall.ERANGE)
	r, err = c.ListXattr(ctx, f.Ino, 1<<20) // cut to XattrSizeMax, as listxattr(2)
	if err != nil || len(r.Data) != len(want) {
		t.Fatalf("listxattr: %q %v", r.Data, err)
	}
	for _, n := range []string{"user.mime\x00", "user.empty\x00"} {
		if !strings.Contains(string(r.Data), n) {
			t.Fatalf("listxattr %q lacks %q", r.Data, n)
		}
	}
	is("remove", c.RemoveXattr(ctx, f.Ino, "user.mime"), 0)
	is("remove again", c.RemoveXattr(ctx, f.Ino, "user.mime"), syscall.ENODATA)
	r, err = c.ListXattr(ctx, f.Ino, 100)
	if err != nil || string(r.Data) != "user.empty\x00" {
		t.Fatalf("listxattr after remove: %q %v", r.Data, err)
	}
}
