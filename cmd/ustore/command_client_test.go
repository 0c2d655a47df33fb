package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"ustore/client"
	"ustore/dev/memdev"
	"ustore/server"
	"ustore/store"
)

// startTestServer serves a fresh store on a 256 MiB memdev until the end of
// the test, then checks it (fsck) and closes it.
func startTestServer(t *testing.T) string {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	d := memdev.New(256 << 20)
	if err := store.Mkfs(d, store.MkfsOptions{}); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(d, store.Options{Logger: log, DirtyBytes: 32 << 20})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "s.sock")
	srv, err := server.New(st, server.Options{Socket: sock, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		// A test that ends before the Serve goroutine has begun shuts
		// the server down first; Serve then returns ErrClosed.
		if err := <-served; err != nil && !errors.Is(err, server.ErrClosed) {
			t.Errorf("serve: %v", err)
		}
		if err := st.Sync(context.Background()); err != nil {
			t.Errorf("sync: %v", err)
		}
		if err := st.Check(); err != nil {
			t.Errorf("fsck: %v", err)
		}
		if err := st.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return sock
}

// runIO runs the command with stdin and returns its stdout and stderr apart.
func runIO(t *testing.T, stdin io.Reader, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRootCommand()
	var out, errOut bytes.Buffer
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	root.SetIn(stdin)
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errOut.String(), err
}

// exitCode and message are what main makes of a command's error.
func exitCode(err error) int { return exitCodeOf(err) }

func message(err error) string { return fmt.Sprintf("ustore: %v", err) }

// on runs a client command against sock and fails the test on an error.
func on(t *testing.T, sock string, stdin io.Reader, args ...string) string {
	t.Helper()
	out, _, err := runIO(t, stdin, append(args, "--socket", sock)...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return out
}

// TestClient_PutGetCat_Pipes: stdin to put, get and cat to stdout, files
// both ways, and content larger than one request (1 MiB).
func TestClient_PutGetCat_Pipes(t *testing.T) {
	sock := startTestServer(t)
	on(t, sock, strings.NewReader("hello\n"), "put", "/greeting")
	if got := on(t, sock, nil, "get", "/greeting"); got != "hello\n" {
		t.Fatalf("get: %q", got)
	}
	big := make([]byte, 3<<20+123)
	rand.Read(big)
	on(t, sock, bytes.NewReader(big), "put", "--fsync", "big", "-")
	if got := on(t, sock, nil, "cat", "/big"); got != string(big) {
		t.Fatalf("cat of a 3 MiB file: %d bytes", len(got))
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, []byte("from a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	on(t, sock, nil, "put", "/f", src)
	if got := on(t, sock, nil, "cat", "/greeting", "/f", "/greeting"); got != "hello\nfrom a file"+"hello\n" {
		t.Fatalf("cat of three: %q", got)
	}
	dst := filepath.Join(dir, "dst")
	on(t, sock, nil, "get", "-o", dst, "/big")
	if b, err := os.ReadFile(dst); err != nil || !bytes.Equal(b, big) {
		t.Fatalf("get -o: %d bytes, %v", len(b), err)
	}
	// Replacing keeps no temporary file behind.
	on(t, sock, strings.NewReader("new"), "put", "/f")
	if got := on(t, sock, nil, "ls"); got != "greeting\nbig\nf\n" {
		t.Fatalf("ls after puts: %q", got)
	}
	// A missing output file leaves nothing; a missing input is a local error.
	_, _, err := runIO(t, nil, "get", "--socket", sock, "-o", filepath.Join(dir, "nope"), "/nope")
	if exitCode(err) != 1 || message(err) != "ustore: get /nope: no such file or directory" {
		t.Errorf("get of a missing file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "nope")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("get -o of a missing file left %v", err)
	}
	_, _, err = runIO(t, nil, "put", "--socket", sock, "/x", filepath.Join(dir, "missing"))
	if exitCode(err) != 1 || !strings.Contains(err.Error(), "missing: no such file or directory") {
		t.Errorf("put of a missing local file: %v", err)
	}
}

// TestClient_WriteReadTruncate: in-place writes at offsets, reads of
// ranges, sizes with units.
func TestClient_WriteReadTruncate(t *testing.T) {
	sock := startTestServer(t)
	on(t, sock, strings.NewReader("0123456789"), "put", "/f")
	on(t, sock, strings.NewReader("abc"), "write", "/f", "4")
	if got := on(t, sock, nil, "get", "/f"); got != "0123abc789" {
		t.Fatalf("after write at 4: %q", got)
	}
	if got := on(t, sock, nil, "read", "/f", "2", "5"); got != "23abc" {
		t.Fatalf("read 2 5: %q", got)
	}
	if got := on(t, sock, nil, "read", "/f", "8", "1k"); got != "89" {
		t.Fatalf("read past the end: %q", got)
	}
	if got := on(t, sock, nil, "read", "/f", "1M", "10"); got != "" {
		t.Fatalf("read beyond the end: %q", got)
	}
	_, _, err := runIO(t, strings.NewReader("x"), "write", "--socket", sock, "/new", "0")
	if exitCode(err) != 1 || message(err) != "ustore: write /new: no such file or directory" {
		t.Fatalf("write to a missing file: %v", err)
	}
	// --create, at an offset past the end (a hole), from a file, 9 MiB:
	// more than one chunk of the copy.
	data := bytes.Repeat([]byte("0123456789abcdef"), 9<<16)
	src := filepath.Join(t.TempDir(), "src")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	on(t, sock, nil, "write", "--create", "--fsync", "/new", "4k", src)
	got := on(t, sock, nil, "get", "/new")
	if len(got) != 4096+len(data) || got[:4096] != string(make([]byte, 4096)) || got[4096:] != string(data) {
		t.Fatalf("write --create at 4k: %d bytes", len(got))
	}
	on(t, sock, nil, "truncate", "/new", "1k")
	on(t, sock, nil, "truncate", "/f", "2M")
	out := on(t, sock, nil, "stat", "--json", "/f")
	var st statJSON
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Size != 2<<20 {
		t.Fatalf("stat after truncate 2M: %+v %v", st, err)
	}
	if got := on(t, sock, nil, "read", "/new", "0", "1M"); len(got) != 1024 {
		t.Fatalf("after truncate 1k: %d bytes", len(got))
	}
	on(t, sock, nil, "fsync", "/f")
	on(t, sock, nil, "fsync", "--data", "/new")
	on(t, sock, nil, "fsync", "/")
	on(t, sock, nil, "sync")
}

// TestClient_LsPaging_RmRecursive lists a directory of more names than one
// readdir answers (1024), in creation order, short and long; then removes
// it, with a subdirectory tree, with rm -r.
func TestClient_LsPaging_RmRecursive(t *testing.T) {
	sock := startTestServer(t)
	const n = 1100
	on(t, sock, nil, "mkdir", "-p", "/d/sub/deeper")
	ctx := context.Background()
	c, err := client.Dial(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d, err := c.Resolve(ctx, "/d")
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("file-%04d", i)
	}
	// In order (the listing's order is the creation order), pipelined in
	// batches.
	for i := 0; i < n; i += 100 {
		err := forEach(100, names[i:min(i+100, n)], func(_ int, name string) error {
			_, err := c.Create(ctx, d.Ino, name, 0o640)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"/d/sub/a", "/d/sub/deeper/b", "/d/sub/deeper/c"} {
		on(t, sock, strings.NewReader(p), "put", p)
	}
	lines := strings.Split(strings.TrimSuffix(on(t, sock, nil, "ls", "/d"), "\n"), "\n")
	if len(lines) != n+1 || lines[0] != "sub" {
		t.Fatalf("ls: %d lines, first %q", len(lines), lines[0])
	}
	got := map[string]bool{}
	for _, l := range lines[1:] {
		got[l] = true
	}
	if len(got) != n || !got["file-0000"] || !got["file-1099"] {
		t.Fatalf("ls: %d distinct names", len(got))
	}
	long := strings.Split(strings.TrimSuffix(on(t, sock, nil, "ls", "-l", "/d"), "\n"), "\n")
	if len(long) != n+1 {
		t.Fatalf("ls -l: %d lines", len(long))
	}
	re := regexp.MustCompile(`^-rw-r----- +1 +0 +\d{4}-\d\d-\d\d \d\d:\d\d file-\d{4}$`)
	for _, l := range long[1:] {
		if !re.MatchString(l) {
			t.Fatalf("ls -l line %q", l)
		}
	}
	if !regexp.MustCompile(`^drwxr-xr-x +3 +2 .* sub$`).MatchString(long[0]) {
		t.Fatalf("ls -l of a directory: %q", long[0])
	}
	if got := on(t, sock, nil, "ls", "-l", "/d/sub/a"); !strings.HasPrefix(got, "-rw-r--r-- 1 8 ") || !strings.HasSuffix(got, " /d/sub/a\n") {
		t.Fatalf("ls -l of a file: %q", got)
	}

	_, _, err = runIO(t, nil, "rm", "--socket", sock, "/d")
	if exitCode(err) != 1 || !strings.HasPrefix(message(err), "ustore: rm /d: is a directory (use -r") {
		t.Fatalf("rm of a directory: %v", err)
	}
	on(t, sock, nil, "rm", "/d/sub/a")
	on(t, sock, nil, "rm", "-r", "/d")
	if got := on(t, sock, nil, "ls"); got != "" {
		t.Fatalf("after rm -r: %q", got)
	}
	on(t, sock, nil, "rm", "-f", "/d", "/nothing")
	_, _, err = runIO(t, nil, "rm", "--socket", sock, "-r", "/")
	if exitCode(err) != 1 || !strings.Contains(err.Error(), "root") {
		t.Fatalf("rm -r /: %v", err)
	}
}

// TestClient_MkdirMvStatDf: the namespace commands and the store's space.
func TestClient_MkdirMvStatDf(t *testing.T) {
	sock := startTestServer(t)
	on(t, sock, nil, "mkdir", "/a", "/b")
	on(t, sock, nil, "mkdir", "-p", "/a/x/y", "/a") // -p: an existing one is fine
	_, _, err := runIO(t, nil, "mkdir", "--socket", sock, "/a")
	if exitCode(err) != 1 || message(err) != "ustore: mkdir /a: file exists" {
		t.Fatalf("mkdir of an existing directory: %v", err)
	}
	_, _, err = runIO(t, nil, "mkdir", "--socket", sock, "/no/such")
	if exitCode(err) != 1 || message(err) != "ustore: mkdir /no/such: no such file or directory (use -p to make missing parents)" {
		t.Fatalf("mkdir without its parent: %v", err)
	}
	on(t, sock, strings.NewReader("content"), "put", "/f")
	on(t, sock, nil, "mv", "/f", "/b")           // into the directory
	on(t, sock, nil, "mv", "/b/f", "/a/x/g")     // renamed
	on(t, sock, nil, "mv", "-T", "/a/x/y", "/b") // an empty directory replaced
	on(t, sock, nil, "mkdir", "/a2")
	on(t, sock, nil, "mv", "/a2", "/a")  // a sibling whose name extends the source's is no subdirectory
	on(t, sock, nil, "mv", "/a/a2", "/") // back
	on(t, sock, nil, "rm", "-r", "/a2")
	if got := on(t, sock, nil, "ls", "/a/x"); got != "g\n" {
		t.Fatalf("after mv: ls /a/x %q", got)
	}
	if got := on(t, sock, nil, "get", "/a/x/g"); got != "content" {
		t.Fatalf("after mv: %q", got)
	}
	out := on(t, sock, nil, "stat", "/a/x/g")
	for _, want := range []string{"path: /a/x/g", "type: regular file", "mode: 0644 (-rw-r--r--)", "size: 7", "links: 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("stat lacks %q:\n%s", want, out)
		}
	}
	var st statJSON
	if err := json.Unmarshal([]byte(on(t, sock, nil, "stat", "--json", "/a")), &st); err != nil ||
		st.Type != "directory" || st.Mode != "0755" || st.Nlink != 3 || st.Mtime == "" {
		t.Fatalf("stat --json: %+v %v", st, err)
	}
	var df dfJSON
	if err := json.Unmarshal([]byte(on(t, sock, nil, "df", "--json")), &df); err != nil ||
		df.Size != 256<<20 || df.Used == 0 || df.Avail == 0 || df.Used+df.Avail > df.Size {
		t.Fatalf("df --json: %+v %v", df, err)
	}
	if out := on(t, sock, nil, "df", "-h"); !strings.Contains(out, "256M") || !strings.Contains(out, "Use%") {
		t.Fatalf("df -h:\n%s", out)
	}
	if out := on(t, sock, nil, "df"); !strings.Contains(out, "268435456") {
		t.Fatalf("df:\n%s", out)
	}
}

// TestClient_Errors: a failed operation is one line and exit code 1; bad
// usage is exit code 2; a missing server names the socket and `ustore serve`.
func TestClient_Errors(t *testing.T) {
	sock := startTestServer(t)
	on(t, sock, nil, "mkdir", "/dir")
	on(t, sock, strings.NewReader("x"), "put", "/file")
	for _, tc := range []struct {
		args []string
		code int
		msg  string // the whole line, or its start when it ends with "…"
	}{
		{[]string{"stat", "/x"}, 1, "ustore: stat /x: no such file or directory"},
		{[]string{"get", "/dir"}, 1, "ustore: get /dir: is a directory"},
		{[]string{"cat", "/file", "/x"}, 1, "ustore: cat /x: no such file or directory"},
		{[]string{"ls", "/file/x"}, 1, "ustore: ls /file/x: not a directory"},
		{[]string{"rm", "/x"}, 1, "ustore: rm /x: no such file or directory"},
		{[]string{"mv", "/file", "/x/y"}, 1, "ustore: mv /x: no such file or directory"},
		{[]string{"mv", "/dir", "/dir/sub"}, 1, "ustore: mv /dir to /dir/sub: cannot move a directory into a subdirectory of itself"},
		{[]string{"mv", "/dir", "/dir/in/deep"}, 1, "ustore: mv /dir to /dir/in/deep: cannot move a directory into a subdirectory of itself"},
		{[]string{"mkdir", "/dir/a/b"}, 1, "ustore: mkdir /dir/a/b: no such file or directory (use -p to make missing parents)"},
		{[]string{"mkdir", "/file/a"}, 1, "ustore: mkdir /file/a: not a directory"},
		{[]string{"read", "/dir", "0", "1"}, 1, "ustore: read /dir: is a directory"},
		{[]string{"truncate", "/x", "0"}, 1, "ustore: truncate /x: no such file or directory"},
		{[]string{"fsync", "/x"}, 1, "ustore: fsync /x: no such file or directory"},
		{[]string{"read", "/file", "x", "1"}, 2, `ustore: OFFSET: "x" is not a byte count…`},
		{[]string{"truncate", "/file", "lots"}, 2, `ustore: SIZE: "lots" is not a byte count…`},
		{[]string{"mkdir", "--mode", "9", "/y"}, 2, `ustore: --mode "9"…`},
		{[]string{"put"}, 2, "ustore: accepts between 1 and 2 arg(s), received 0"},
		{[]string{"ls", "/a", "/b"}, 2, "ustore: accepts between 0 and 1 arg(s), received 2"},
		{[]string{"stat"}, 2, "ustore: accepts 1 arg(s), received 0"},
		{[]string{"sync", "extra"}, 2, `ustore: unknown command "extra" for "ustore sync"`},
		{[]string{"df", "--nope"}, 2, "ustore: unknown flag: --nope"},
		{[]string{"get", "/file", "--timeout", "soon"}, 2, `ustore: invalid argument "soon"…`},
	} {
		_, _, err := runIO(t, nil, append(tc.args, "--socket", sock)...)
		msg := message(err)
		ok := msg == tc.msg
		if prefix, cut := strings.CutSuffix(tc.msg, "…"); cut {
			ok = strings.HasPrefix(msg, prefix)
		}
		if exitCode(err) != tc.code || !ok || strings.Contains(msg, "\n") {
			t.Errorf("%v: exit %d, %q; want exit %d, %q", tc.args, exitCode(err), msg, tc.code, tc.msg)
		}
	}

	// No server: the socket tried, and what to do.
	missing := filepath.Join(t.TempDir(), "none.sock")
	_, _, err := runIO(t, nil, "ls", "--socket", missing)
	want := "ustore: connect to " + missing + ": no such file or directory (is the server running? start it with 'ustore serve'"
	if exitCode(err) != 1 || !strings.HasPrefix(message(err), want) || strings.Contains(message(err), "\n") {
		t.Fatalf("no server: %q", message(err))
	}
	// A socket nobody listens on any more; a server that never answers
	// the handshake, with --timeout shorter than the connection's own bound.
	stale := filepath.Join(t.TempDir(), "stale.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	_, _, err = runIO(t, nil, "df", "--socket", stale)
	if exitCode(err) != 1 || !strings.HasPrefix(message(err), "ustore: connect to "+stale+": connection refused (is the server running?") {
		t.Fatalf("a stale socket: %q", message(err))
	}
	// --socket at a directory or a file: what it is, not "is the server
	// running?".
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, what := range map[string]string{dir: "is a directory", plain: "is a regular file"} {
		_, _, err = runIO(t, nil, "ls", "--socket", path)
		want := "ustore: connect to " + path + ": " + what + ", not a socket (point --socket or $USTORE_SOCKET at the server's socket: 'ustore serve --socket')"
		if exitCode(err) != 1 || message(err) != want {
			t.Errorf("--socket %s: exit %d, %q; want %q", path, exitCode(err), message(err), want)
		}
	}
	mute := filepath.Join(t.TempDir(), "mute.sock")
	ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: mute, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, _, err = runIO(t, nil, "sync", "--socket", mute, "--timeout", "100ms")
	if exitCode(err) != 1 || !strings.HasPrefix(message(err), "ustore: connect to "+mute+": no answer within 100ms") {
		t.Fatalf("a server that does not answer: %q", message(err))
	}

	// $USTORE_SOCKET is the default; --socket wins over it.
	t.Setenv(socketEnv, sock)
	if out, _, err := runIO(t, nil, "ls"); err != nil || out != "dir\nfile\n" {
		t.Fatalf("ls with $%s: %q %v", socketEnv, out, err)
	}
	if _, _, err := runIO(t, nil, "ls", "--socket", missing); exitCode(err) != 1 {
		t.Fatalf("--socket over $%s: %v", socketEnv, err)
	}
	t.Setenv(socketEnv, "")
	out, _, err := runIO(t, nil, "stat", "--help")
	if err != nil || !strings.Contains(out, "ustore-data/ustore.sock") || !strings.Contains(out, "--json") || !strings.Contains(out, "--timeout") {
		t.Fatalf("stat --help: %v\n%s", err, out)
	}
}

// TestClient_Binary runs the built command through a shell-like pipe: its
// real exit codes, stdout and stderr.
func TestClient_Binary(t *testing.T) {
	sock := startTestServer(t)
	bin := buildUstore(t)
	exe := func(stdin string, args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(bin, append(args, "--socket", sock)...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var ee *exec.ExitError
		code := 0
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errOut.String(), code
	}
	if _, stderr, code := exe("piped in\n", "put", "/p"); code != 0 || stderr != "" {
		t.Fatalf("put: exit %d, %q", code, stderr)
	}
	if out, _, code := exe("", "get", "/p"); code != 0 || out != "piped in\n" {
		t.Fatalf("get: exit %d, %q", code, out)
	}
	if _, stderr, code := exe("", "stat", "/x"); code != 1 || stderr != "ustore: stat /x: no such file or directory\n" {
		t.Fatalf("stat of a missing file: exit %d, %q", code, stderr)
	}
	if _, stderr, code := exe("", "read", "/p", "0"); code != 2 || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("read without LENGTH: exit %d, %q", code, stderr)
	}
}

// mv --no-replace refuses an existing name and moves to a free one; mv
// --exchange swaps a file and a directory; both flags are a usage error.
func TestClient_MvNoReplaceExchange(t *testing.T) {
	sock := startTestServer(t)
	on(t, sock, strings.NewReader("one"), "put", "/f")
	on(t, sock, strings.NewReader("two"), "put", "/g")
	on(t, sock, nil, "mkdir", "/d")
	_, _, err := runIO(t, nil, "mv", "--socket", sock, "--no-replace", "/f", "/g")
	if exitCode(err) != 1 || message(err) != "ustore: mv /f to /g: file exists" {
		t.Fatalf("mv --no-replace over a file: %v", err)
	}
	if got := on(t, sock, nil, "get", "/g"); got != "two" {
		t.Fatalf("after the refused mv: /g is %q", got)
	}
	on(t, sock, nil, "mv", "--no-replace", "/f", "/d") // into the directory, a free name
	if got := on(t, sock, nil, "get", "/d/f"); got != "one" {
		t.Fatalf("after mv --no-replace: %q", got)
	}
	on(t, sock, nil, "mv", "--exchange", "/g", "/d")
	if got := on(t, sock, nil, "get", "/d"); got != "two" {
		t.Fatalf("after mv --exchange: /d is %q", got)
	}
	if got := on(t, sock, nil, "get", "/g/f"); got != "one" {
		t.Fatalf("after mv --exchange: /g/f is %q", got)
	}
	_, _, err = runIO(t, nil, "mv", "--socket", sock, "--exchange", "/g", "/nope")
	if exitCode(err) != 1 || message(err) != "ustore: mv /g to /nope: no such file or directory" {
		t.Fatalf("mv --exchange with a missing name: %v", err)
	}
	_, _, err = runIO(t, nil, "mv", "--socket", sock, "--exchange", "--no-replace", "/g", "/d")
	if exitCode(err) != 2 {
		t.Fatalf("mv --exchange --no-replace: %v", err)
	}
}

// fallocate grows a file with zeros (blocks allocated), --keep-size keeps
// the size, --punch-hole frees and zeroes; bad usage is exit code 2, a
// directory exit code 1.
func TestClient_Fallocate(t *testing.T) {
	sock := startTestServer(t)
	on(t, sock, strings.NewReader("hello"), "put", "/f")
	on(t, sock, nil, "fallocate", "-l", "64k", "/f")
	var st statJSON
	if err := json.Unmarshal([]byte(on(t, sock, nil, "stat", "--json", "/f")), &st); err != nil || st.Size != 64<<10 || st.Blocks != 64<<10 {
		t.Fatalf("after fallocate -l 64k: %+v %v", st, err)
	}
	on(t, sock, nil, "fallocate", "--keep-size", "-o", "32k", "-l", "1M", "/f")
	if err := json.Unmarshal([]byte(on(t, sock, nil, "stat", "--json", "/f")), &st); err != nil || st.Size != 64<<10 {
		t.Fatalf("after fallocate -n: %+v %v", st, err)
	}
	on(t, sock, nil, "fallocate", "-p", "-o", "1", "-l", "8k", "/f")
	if err := json.Unmarshal([]byte(on(t, sock, nil, "stat", "--json", "/f")), &st); err != nil || st.Size != 64<<10 || st.Blocks != 60<<10 {
		t.Fatalf("after fallocate -p: %+v %v", st, err)
	}
	if got := on(t, sock, nil, "get", "/f"); got != "h"+strings.Repeat("\x00", 64<<10-1) {
		t.Fatalf("content after the punch: %q…", got[:min(len(got), 8)])
	}
	for _, args := range [][]string{{"/f"}, {"-l", "0", "/f"}, {"-l", "x", "/f"}, {"-l", "1"}} {
		_, _, err := runIO(t, nil, append([]string{"fallocate", "--socket", sock}, args...)...)
		if exitCode(err) != 2 {
			t.Errorf("fallocate %v: %v, want a usage error", args, err)
		}
	}
	on(t, sock, nil, "mkdir", "/d")
	_, _, err := runIO(t, nil, "fallocate", "--socket", sock, "-l", "1", "/d")
	if exitCode(err) != 1 || !strings.Contains(message(err), "is a directory") {
		t.Fatalf("fallocate of a directory: %v", err)
	}
}
