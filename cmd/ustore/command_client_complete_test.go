package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// TestClient_Complete: store paths complete from a real server through
// cobra's hidden __complete (what the bash, zsh and fish scripts run):
// names as typed, directories with "/" and no space after, local files
// left to the shell, nothing (and nothing on stderr but cobra's directive
// line, which the scripts discard) when no server answers.
func TestClient_Complete(t *testing.T) {
	sock := startTestServer(t)
	on(t, sock, nil, "mkdir", "-p", "/data/b", "/docs")
	on(t, sock, strings.NewReader("x"), "put", "/dance")
	on(t, sock, strings.NewReader("x"), "put", "/data/a")
	on(t, sock, strings.NewReader("x"), "put", "/x")
	// The directives: 0 the shell's default (files), 4 no file
	// completion, 6 that and no space after.
	for _, tc := range []struct {
		args []string // after __complete; --socket is added before the last
		want string
	}{
		{[]string{"ls", "/d"}, "/data/\n/docs/\n/dance\n:6\n"},
		{[]string{"ls", "/da"}, "/data/\n/dance\n:6\n"},
		{[]string{"ls", "/dan"}, "/dance\n:4\n"},
		{[]string{"ls", "da"}, "data/\ndance\n:6\n"},
		{[]string{"ls", ""}, "/data/\n/docs/\n/dance\n/x\n:6\n"},
		{[]string{"ls", "/data/"}, "/data/b/\n/data/a\n:6\n"},
		{[]string{"ls", "data/b"}, "data/b/\n:6\n"},
		{[]string{"ls", "//data/"}, "//data/b/\n//data/a\n:6\n"},
		{[]string{"ls", "/nope/"}, ":4\n"},
		{[]string{"ls", "/dance/"}, ":4\n"},
		{[]string{"ls", "/data", ""}, ":4\n"}, // ls takes one PATH
		{[]string{"stat", "/x"}, "/x\n:4\n"},
		{[]string{"get", "/data/a"}, "/data/a\n:4\n"},
		{[]string{"cat", "/x", "/data/"}, "/data/b/\n/data/a\n:6\n"},
		{[]string{"rm", "-r", "/x", "/do"}, "/docs/\n:6\n"},
		{[]string{"mkdir", "-p", "/docs/"}, ":4\n"},
		{[]string{"mv", "/x", "/do"}, "/docs/\n:6\n"},
		{[]string{"fsync", "/x"}, "/x\n:4\n"},
		{[]string{"readlink", "/x"}, "/x\n:4\n"},
		{[]string{"ln", "-s", "/x", "/do"}, "/docs/\n:6\n"},
		{[]string{"truncate", "/x"}, "/x\n:4\n"},
		{[]string{"truncate", "/x", ""}, ":4\n"}, // SIZE
		{[]string{"read", "/data/a", "0", ""}, ":4\n"},
		{[]string{"put", "/x"}, "/x\n:4\n"},
		{[]string{"put", "/x", ""}, ":0\n"}, // FILE: the shell's files
		{[]string{"write", "/x", ""}, ":4\n"},
		{[]string{"write", "/x", "0", ""}, ":0\n"},
		{[]string{"df", ""}, ":4\n"},
		{[]string{"sync", ""}, ":4\n"},
	} {
		n := len(tc.args)
		args := append(append([]string{"__complete"}, tc.args[:n-1]...), "--socket", sock, tc.args[n-1])
		out, errOut, err := runIO(t, nil, args...)
		if err != nil || out != tc.want || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "Completion ended with directive: ") {
			t.Errorf("%v: %v, %q (stderr %q); want %q", tc.args, err, out, errOut, tc.want)
		}
	}

	// The server from $USTORE_SOCKET, as for the commands.
	t.Setenv(socketEnv, sock)
	if out, _, err := runIO(t, nil, "__complete", "ls", "/x"); err != nil || out != "/x\n:4\n" {
		t.Errorf("with $%s: %v, %q", socketEnv, err, out)
	}
	t.Setenv(socketEnv, "")

	// No server, a socket nobody listens on, and a server that never
	// answers the handshake (completion gives up after completeTimeout):
	// no completions, and on stderr only the directive line.
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	mute := filepath.Join(dir, "mute.sock")
	ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: mute, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, s := range []string{filepath.Join(dir, "none.sock"), stale, mute, dir} {
		out, errOut, err := runIO(t, nil, "__complete", "ls", "--socket", s, "/")
		if err != nil || out != ":4\n" || errOut != "Completion ended with directive: ShellCompDirectiveNoFileComp\n" {
			t.Errorf("--socket %s: %v, %q, stderr %q", s, err, out, errOut)
		}
	}
}
