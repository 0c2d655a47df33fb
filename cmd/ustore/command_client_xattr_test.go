package main

import (
	"strings"
	"testing"
)

// TestClient_Xattr: set (an argument, standard input, --create and
// --replace), get, list and rm, and their errors with exit code 1.
func TestClient_Xattr(t *testing.T) {
	sock := startTestServer(t)
	on(t, sock, strings.NewReader("x"), "put", "/doc")
	on(t, sock, nil, "xattr", "set", "/doc", "user.mime_type", "text/plain")
	on(t, sock, strings.NewReader("a\x00b"), "xattr", "set", "--create", "/doc", "user.binary")
	if got := on(t, sock, nil, "xattr", "get", "/doc", "user.mime_type"); got != "text/plain" {
		t.Fatalf("get: %q", got)
	}
	if got := on(t, sock, nil, "xattr", "get", "doc", "user.binary"); got != "a\x00b" {
		t.Fatalf("get of a value from stdin: %q", got)
	}
	if got := on(t, sock, nil, "xattr", "list", "/doc"); got != "user.mime_type\nuser.binary\n" && got != "user.binary\nuser.mime_type\n" {
		t.Fatalf("list: %q", got)
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"xattr", "set", "--create", "/doc", "user.binary", "v"}, "ustore: xattr set /doc user.binary: file exists"},
		{[]string{"xattr", "set", "--replace", "/doc", "user.none", "v"}, "ustore: xattr set /doc user.none: no data available"},
		{[]string{"xattr", "set", "/doc", "trusted.a", "v"}, "ustore: xattr set /doc trusted.a: operation not supported"},
		{[]string{"xattr", "get", "/doc", "user.none"}, "ustore: xattr get /doc user.none: no data available"},
		{[]string{"xattr", "rm", "/doc", "user.none"}, "ustore: xattr rm /doc user.none: no data available"},
		{[]string{"xattr", "list", "/nope"}, "ustore: xattr list /nope: no such file or directory"},
	} {
		_, _, err := runIO(t, nil, append(c.args, "--socket", sock)...)
		if exitCode(err) != 1 || message(err) != c.msg {
			t.Errorf("%v: exit %d, %v; want 1, %q", c.args, exitCode(err), err, c.msg)
		}
	}
	on(t, sock, nil, "xattr", "rm", "/doc", "user.binary")
	if got := on(t, sock, nil, "xattr", "list", "/doc"); got != "user.mime_type\n" {
		t.Fatalf("list after rm: %q", got)
	}
	// Usage errors: exit code 2.
	for _, args := range [][]string{{"xattr", "get", "/doc"}, {"xattr", "set", "--create", "--replace", "/doc", "user.a", "v"}} {
		_, _, err := runIO(t, nil, append(args, "--socket", sock)...)
		if exitCode(err) != 2 {
			t.Errorf("%v: exit %d (%v), want 2", args, exitCode(err), err)
		}
	}
	if out, _, err := runIO(t, nil, "xattr", "set", "--help"); err != nil || !strings.Contains(out, "--replace") {
		t.Errorf("xattr set --help: %v\n%s", err, out)
	}
}
