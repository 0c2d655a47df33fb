package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"ustore/client"
	"ustore/proto"
	"ustore/store"
)

// TestServer_Ops_EndToEnd runs every op of the protocol through the client
// and checks its effect, through the client and on the store.
func TestServer_Ops_EndToEnd(t *testing.T) {
	ts := newStoreServer(t)
	c := dial(t, ts.sock)
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	d, err := c.Mkdir(ctx, client.RootIno, "dir", 0o750)
	must(err)
	if !d.IsDir() || d.Mode&0o7777 != 0o750 || d.Nlink != 2 {
		t.Fatalf("mkdir: %+v", d)
	}
	f, err := c.Create(ctx, d.Ino, "file", 0o640)
	must(err)
	if f.IsDir() || f.Mode&0o7777 != 0o640 || f.Size != 0 {
		t.Fatalf("create: %+v", f)
	}
	if a, err := c.Lookup(ctx, d.Ino, "file"); err != nil || a.Ino != f.Ino {
		t.Fatalf("lookup: %+v %v", a, err)
	}

	// write, read, stat
	data := []byte("hello, ustore")
	n, err := c.Write(ctx, f.Ino, 0, data)
	if err != nil || n != len(data) {
		t.Fatalf("write: %d %v", n, err)
	}
	buf := make([]byte, 100)
	n, err = c.Read(ctx, f.Ino, 0, buf)
	if err != nil || !bytes.Equal(buf[:n], data) {
		t.Fatalf("read: %q %v", buf[:n], err)
	}
	n, err = c.Read(ctx, f.Ino, 7, buf[:3])
	if err != nil || string(buf[:n]) != "ust" {
		t.Fatalf("read at 7: %q %v", buf[:n], err)
	}
	if a, err := c.Stat(ctx, f.Ino); err != nil || a.Size != uint64(len(data)) {
		t.Fatalf("stat: %+v %v", a, err)
	}
	n, err = c.WriteWith(ctx, f.Ino, uint64(len(data)), []byte("!"), proto.WriteDsync)
	if err != nil || n != 1 {
		t.Fatalf("write dsync: %d %v", n, err)
	}
	n, err = c.WriteWith(ctx, f.Ino, uint64(len(data))+1, []byte("?"), proto.WriteSync)
	if err != nil || n != 1 {
		t.Fatalf("write sync: %d %v", n, err)
	}

	// setattr and truncate
	mtime := time.Unix(1_700_000_000, 123456789)
	a, err := c.SetAttr(ctx, f.Ino, proto.SetAttr{Mask: proto.SetMode | proto.SetUID | proto.SetGID | proto.SetMtime | proto.SetAtime,
		Mode: 0o600, UID: 1000, GID: 1001, Mtime: proto.TimespecOf(mtime), Atime: proto.TimespecOf(mtime)})
	must(err)
	if a.Mode&0o7777 != 0o600 || a.UID != 1000 || a.GID != 1001 || !a.Mtime.Time().Equal(mtime) || !a.Atime.Time().Equal(mtime) {
		t.Fatalf("setattr: %+v", a)
	}
	must(c.Truncate(ctx, f.Ino, 5))
	if a, _ := c.Stat(ctx, f.Ino); a.Size != 5 {
		t.Fatalf("truncate: size %d", a.Size)
	}
	must(c.Truncate(ctx, f.Ino, 8192))
	n, err = c.Read(ctx, f.Ino, 0, buf[:10])
	if err != nil || !bytes.Equal(buf[:n], []byte("hello\x00\x00\x00\x00\x00")) {
		t.Fatalf("read after truncate and extend: %q %v", buf[:n], err)
	}

	// link, readdir (paged), rename, unlink, rmdir
	l, err := c.Link(ctx, f.Ino, client.RootIno, "hardlink")
	must(err)
	if l.Ino != f.Ino || l.Nlink != 2 {
		t.Fatalf("link: %+v", l)
	}
	for i := range 10 {
		_, err := c.Create(ctx, d.Ino, "f"+string(rune('a'+i)), 0o644)
		must(err)
	}
	var names []string
	cookie := uint64(0)
	for {
		es, err := c.ReadDir(ctx, d.Ino, cookie, 4)
		must(err)
		for _, e := range es {
			names = append(names, e.Name)
		}
		if len(es) < 4 {
			break
		}
		cookie = es[len(es)-1].Cookie
	}
	if got := strings.Join(names, ","); got != "file,fa,fb,fc,fd,fe,ff,fg,fh,fi,fj" {
		t.Fatalf("readdir: %s", got)
	}
	must(c.Rename(ctx, d.Ino, "file", client.RootIno, "moved"))
	if _, err := c.Lookup(ctx, d.Ino, "file"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("lookup after rename: %v", err)
	}
	if a, err := c.Resolve(ctx, "/moved"); err != nil || a.Ino != f.Ino {
		t.Fatalf("resolve /moved: %+v %v", a, err)
	}
	must(c.Unlink(ctx, client.RootIno, "hardlink"))
	for i := range 10 {
		must(c.Unlink(ctx, d.Ino, "f"+string(rune('a'+i))))
	}
	must(c.Rmdir(ctx, client.RootIno, "dir"))
	if _, err := c.Stat(ctx, d.Ino); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stat of a removed directory: %v", err)
	}

	// fsync, sync, statfs
	must(c.Fsync(ctx, f.Ino, false))
	must(c.Fsync(ctx, f.Ino, true))
	must(c.Sync(ctx))
	sf, err := c.StatFS(ctx)
	must(err)
	if sf.BlockSize != 4096 || sf.NameMax != 255 || sf.Blocks != (256<<20)/4096 || sf.BlocksFree == 0 || sf.BlocksAvail > sf.BlocksFree {
		t.Fatalf("statfs: %+v", sf)
	}

	// put and get, small and large (chunked), and the store agrees
	small := []byte("small content")
	pa, err := c.Put(ctx, "/moved", small, true)
	must(err)
	if pa.Size != uint64(len(small)) || pa.Ino == f.Ino {
		t.Fatalf("put: %+v", pa)
	}
	if got, err := c.Get(ctx, "/moved"); err != nil || !bytes.Equal(got, small) {
		t.Fatalf("get: %q %v", got, err)
	}
	large := randomBytes(3<<20 + 12345)
	la, err := c.Put(ctx, "/large", large, true)
	must(err)
	if la.Size != uint64(len(large)) {
		t.Fatalf("large put: %+v", la)
	}
	if got, err := c.Get(ctx, "/large"); err != nil || !bytes.Equal(got, large) {
		t.Fatalf("large get: %d bytes, %v", len(got), err)
	}
	if got, err := ts.st.Get("/large"); err != nil || !bytes.Equal(got, large) {
		t.Fatalf("store's get: %d bytes, %v", len(got), err)
	}
	es, err := c.ReadDir(ctx, client.RootIno, 0, 100)
	must(err)
	for _, e := range es {
		if strings.HasPrefix(e.Name, ".put.") {
			t.Fatalf("a temporary file is left: %s", e.Name)
		}
	}

	// large write and read at an offset, by inode
	big, err := c.Create(ctx, client.RootIno, "big", 0o644)
	must(err)
	n, err = c.Write(ctx, big.Ino, 4096, large)
	if err != nil || n != len(large) {
		t.Fatalf("large write: %d %v", n, err)
	}
	back := make([]byte, len(large)+100)
	n, err = c.Read(ctx, big.Ino, 4096, back)
	if err != nil || n != len(large) || !bytes.Equal(back[:n], large) {
		t.Fatalf("large read: %d %v", n, err)
	}

	// rename2: no-replace to a free name, exchange of a file and a
	// directory; fallocate: grow, punch
	must(c.Rename2(ctx, client.RootIno, "big", client.RootIno, "big2", proto.RenameNoReplace))
	xd, err := c.Mkdir(ctx, client.RootIno, "xd", 0o755)
	must(err)
	must(c.Rename2(ctx, client.RootIno, "big2", client.RootIno, "xd", proto.RenameExchange))
	if a, err := c.Lookup(ctx, client.RootIno, "xd"); err != nil || a.Ino != big.Ino {
		t.Fatalf("after the exchange, xd: %+v %v", a, err)
	}
	if a, err := c.Lookup(ctx, client.RootIno, "big2"); err != nil || a.Ino != xd.Ino {
		t.Fatalf("after the exchange, big2: %+v %v", a, err)
	}
	fa, err := c.Fallocate(ctx, big.Ino, 0, 0, 8<<20)
	must(err)
	if fa.Size != 8<<20 || fa.Blocks != 8<<20 {
		t.Fatalf("fallocate: size %d blocks %d", fa.Size, fa.Blocks)
	}
	fa, err = c.Fallocate(ctx, big.Ino, proto.FallocPunchHole|proto.FallocKeepSize, 4096, 1<<20)
	must(err)
	if fa.Size != 8<<20 || fa.Blocks != 7<<20 {
		t.Fatalf("punch: size %d blocks %d", fa.Size, fa.Blocks)
	}
	n, err = c.Read(ctx, big.Ino, 4096, back[:1<<20])
	if err != nil || n != 1<<20 || !bytes.Equal(back[:n], make([]byte, 1<<20)) {
		t.Fatalf("read of the punched range: %d %v", n, err)
	}

	// streams
	w, err := c.OpenWriter(ctx, "/streamed", false)
	must(err)
	for off := 0; off < len(large); off += 70000 {
		if _, err := w.Write(large[off:min(off+70000, len(large))]); err != nil {
			t.Fatal(err)
		}
	}
	must(w.Close())
	r, err := c.OpenReader(ctx, "/streamed")
	must(err)
	got, err := io.ReadAll(r)
	must(err)
	r.Close()
	if !bytes.Equal(got, large) || r.Attr().Size != uint64(len(large)) {
		t.Fatalf("stream: %d bytes back of %d", len(got), len(large))
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rng := rand.NewChaCha8([32]byte{1})
	rng.Read(b)
	return b
}

// TestServer_Errors_Statuses checks that bad input gets the right status,
// and that errors.Is works on it as on a local error.
func TestServer_Errors_Statuses(t *testing.T) {
	ts := newStoreServer(t)
	c := dial(t, ts.sock)
	ctx := context.Background()
	f, err := c.Create(ctx, client.RootIno, "f", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Mkdir(ctx, client.RootIno, "d", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, d.Ino, "child", 0o644); err != nil {
		t.Fatal(err)
	}
	gone, err := c.Create(ctx, client.RootIno, "gone", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Unlink(ctx, client.RootIno, "gone"); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 256)
	buf := make([]byte, 10)
	for _, tc := range []struct {
		name string
		call func() error
		want syscall.Errno
	}{
		{"create empty name", func() error { _, err := c.Create(ctx, client.RootIno, "", 0o644); return err }, syscall.EINVAL},
		{"create name with /", func() error { _, err := c.Create(ctx, client.RootIno, "a/b", 0o644); return err }, syscall.EINVAL},
		{"create .", func() error { _, err := c.Create(ctx, client.RootIno, ".", 0o644); return err }, syscall.EINVAL},
		{"create ..", func() error { _, err := c.Create(ctx, client.RootIno, "..", 0o644); return err }, syscall.EINVAL},
		{"create NUL", func() error { _, err := c.Create(ctx, client.RootIno, "a\x00b", 0o644); return err }, syscall.EINVAL},
		{"create 256 bytes (local)", func() error { _, err := c.Create(ctx, client.RootIno, long, 0o644); return err }, syscall.ENAMETOOLONG},
		{"create existing", func() error { _, err := c.Create(ctx, client.RootIno, "f", 0o644); return err }, syscall.EEXIST},
		{"create in a file", func() error { _, err := c.Create(ctx, f.Ino, "x", 0o644); return err }, syscall.ENOTDIR},
		{"create with a type bit (local)", func() error { _, err := c.Create(ctx, client.RootIno, "x", 0o100644); return err }, syscall.EINVAL},
		{"lookup missing", func() error { _, err := c.Lookup(ctx, client.RootIno, "nope"); return err }, syscall.ENOENT},
		{"lookup in a missing dir", func() error { _, err := c.Lookup(ctx, 999999, "x"); return err }, syscall.ENOENT},
		{"resolve missing", func() error { _, err := c.Resolve(ctx, "/d/nope"); return err }, syscall.ENOENT},
		{"resolve through a file", func() error { _, err := c.Resolve(ctx, "/f/x"); return err }, syscall.ENOTDIR},
		{"resolve ..", func() error { _, err := c.Resolve(ctx, "/d/../f"); return err }, syscall.EINVAL},
		{"resolve path too long (local)", func() error { _, err := c.Resolve(ctx, "/"+strings.Repeat("a/", 2100)); return err }, syscall.ENAMETOOLONG},
		{"get a directory", func() error { _, err := c.Get(ctx, "/d"); return err }, syscall.EISDIR},
		{"get missing", func() error { _, err := c.Get(ctx, "/nope"); return err }, syscall.ENOENT},
		{"put into a missing dir", func() error { _, err := c.Put(ctx, "/nope/x", []byte("a"), false); return err }, syscall.ENOENT},
		{"put over a directory", func() error { _, err := c.Put(ctx, "/d", []byte("a"), false); return err }, syscall.EISDIR},
		{"put the root", func() error { _, err := c.Put(ctx, "/", []byte("a"), false); return err }, syscall.EINVAL},
		{"rmdir non-empty", func() error { return c.Rmdir(ctx, client.RootIno, "d") }, syscall.ENOTEMPTY},
		{"rmdir a file", func() error { return c.Rmdir(ctx, client.RootIno, "f") }, syscall.ENOTDIR},
		{"unlink a directory", func() error { return c.Unlink(ctx, client.RootIno, "d") }, syscall.EISDIR},
		{"unlink missing", func() error { return c.Unlink(ctx, client.RootIno, "nope") }, syscall.ENOENT},
		{"link a directory", func() error { _, err := c.Link(ctx, d.Ino, client.RootIno, "dl"); return err }, syscall.EPERM},
		{"rename a dir under itself", func() error { return c.Rename(ctx, client.RootIno, "d", d.Ino, "sub") }, syscall.EINVAL},
		{"rename a file over a dir", func() error { return c.Rename(ctx, client.RootIno, "f", client.RootIno, "d") }, syscall.EISDIR},
		{"readdir a file", func() error { _, err := c.ReadDir(ctx, f.Ino, 0, 10); return err }, syscall.ENOTDIR},
		{"readdir max 0 (local)", func() error { _, err := c.ReadDir(ctx, client.RootIno, 0, 0); return err }, syscall.EINVAL},
		{"read a directory", func() error { _, err := c.Read(ctx, d.Ino, 0, buf); return err }, syscall.EISDIR},
		{"write a directory", func() error { _, err := c.Write(ctx, d.Ino, 0, buf); return err }, syscall.EISDIR},
		{"write at a huge offset", func() error { _, err := c.Write(ctx, f.Ino, store.MaxFileSize, buf); return err }, syscall.EFBIG},
		{"write at the largest offset", func() error { _, err := c.Write(ctx, f.Ino, 1<<63, buf); return err }, syscall.EFBIG},
		{"truncate huge", func() error { return c.Truncate(ctx, f.Ino, store.MaxFileSize+1) }, syscall.EFBIG},
		{"truncate a directory", func() error { return c.Truncate(ctx, d.Ino, 0) }, syscall.EISDIR},
		{"stat a deleted file", func() error { _, err := c.Stat(ctx, gone.Ino); return err }, syscall.ENOENT},
		{"write a deleted file", func() error { _, err := c.Write(ctx, gone.Ino, 0, buf); return err }, syscall.ENOENT},
		{"read a deleted file", func() error { _, err := c.Read(ctx, gone.Ino, 0, buf); return err }, syscall.ENOENT},
		{"setattr a deleted file", func() error { return c.Truncate(ctx, gone.Ino, 0) }, syscall.ENOENT},
		{"link a deleted file", func() error { _, err := c.Link(ctx, gone.Ino, client.RootIno, "back"); return err }, syscall.ENOENT},
		{"rename2 noreplace over a file", func() error { return c.Rename2(ctx, client.RootIno, "d", client.RootIno, "f", proto.RenameNoReplace) }, syscall.EEXIST},
		{"rename2 exchange with nothing", func() error { return c.Rename2(ctx, client.RootIno, "f", client.RootIno, "nope", proto.RenameExchange) }, syscall.ENOENT},
		{"rename2 both flags", func() error {
			return c.Rename2(ctx, client.RootIno, "f", client.RootIno, "d", proto.RenameExchange|proto.RenameNoReplace)
		}, syscall.EINVAL},
		{"rename2 exchange a dir into itself", func() error { return c.Rename2(ctx, client.RootIno, "d", d.Ino, "child", proto.RenameExchange) }, syscall.EINVAL},
		{"fallocate a directory", func() error { _, err := c.Fallocate(ctx, d.Ino, 0, 0, 10); return err }, syscall.EISDIR},
		{"fallocate punch without keep-size", func() error { _, err := c.Fallocate(ctx, f.Ino, proto.FallocPunchHole, 0, 10); return err }, syscall.EOPNOTSUPP},
		{"fallocate zero length", func() error { _, err := c.Fallocate(ctx, f.Ino, 0, 0, 0); return err }, syscall.EINVAL},
		{"fallocate a negative offset", func() error { _, err := c.Fallocate(ctx, f.Ino, 0, 1<<63, 10); return err }, syscall.EINVAL},
		{"fallocate past the largest file", func() error { _, err := c.Fallocate(ctx, f.Ino, 0, store.MaxFileSize, 10); return err }, syscall.EFBIG},
		{"fallocate a deleted file", func() error { _, err := c.Fallocate(ctx, gone.Ino, 0, 0, 10); return err }, syscall.ENOENT},
		{"stat a never-used inode", func() error { _, err := c.Stat(ctx, 1<<40); return err }, syscall.ENOENT},
	} {
		err := tc.call()
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// The friends of the errnos work too.
	_, err = c.Lookup(ctx, client.RootIno, "nope")
	var se *proto.StatusError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &se) || se.Status != proto.StatusNotExist || se.Message == "" {
		t.Errorf("lookup missing: %v (%#v)", err, se)
	}
	if _, err := c.Create(ctx, client.RootIno, "f", 0o644); !errors.Is(err, fs.ErrExist) {
		t.Errorf("create existing: %v is not fs.ErrExist", err)
	}
	// A read past the end is short, not an error.
	if n, err := c.Read(ctx, f.Ino, 1<<30, buf); n != 0 || err != nil {
		t.Errorf("read past EOF: %d %v", n, err)
	}
	if _, err := c.Write(ctx, f.Ino, 0, []byte("abc")); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Read(ctx, f.Ino, 1, buf); n != 2 || err != nil || string(buf[:2]) != "bc" {
		t.Errorf("read across EOF: %d %q %v", n, buf[:n], err)
	}
	// A write that crosses the largest file size is short.
	n, err := c.Write(ctx, f.Ino, store.MaxFileSize-3, buf)
	if n != 3 || !errors.Is(err, syscall.EFBIG) {
		t.Errorf("write across the largest size: %d %v, want 3 EFBIG", n, err)
	}
	// Nothing broke the connection.
	if _, err := c.Stat(ctx, f.Ino); err != nil {
		t.Fatal(err)
	}
}
