package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// TestClient_LnReadlink: ln -s stores its target as given (dangling and
// relative ones too), ln makes a hard link, readlink prints the target,
// ls -l shows "name -> target", stat and ls --json name the link's type
// and target, and a path through a link fails with ELOOP.
func TestClient_LnReadlink(t *testing.T) {
	sock := startTestServer(t)
	on(t, sock, nil, "mkdir", "/d")
	on(t, sock, strings.NewReader("content"), "put", "/d/f")
	on(t, sock, nil, "ln", "-s", "f", "/d/rel")
	on(t, sock, nil, "ln", "-s", "../no/such", "/dangling")
	on(t, sock, nil, "ln", "-s", "/d", "/d2")
	on(t, sock, nil, "ln", "-s", "../common", "/d") // into the directory, under the target's last name
	on(t, sock, nil, "ln", "/d/f", "/hard")
	for p, want := range map[string]string{"/d/rel": "f\n", "/dangling": "../no/such\n", "/d2": "/d\n", "/d/common": "../common\n"} {
		if got := on(t, sock, nil, "readlink", p); got != want {
			t.Errorf("readlink %s: %q, want %q", p, got, want)
		}
	}
	if got := on(t, sock, nil, "cat", "/hard"); got != "content" {
		t.Errorf("cat of the hard link: %q", got)
	}
	long := on(t, sock, nil, "ls", "-l", "/d")
	if !regexp.MustCompile(`(?m)^lrwxrwxrwx +1 +1 .* rel -> f$`).MatchString(long) ||
		!regexp.MustCompile(`(?m)^-rw-r--r-- +2 +7 .* f$`).MatchString(long) {
		t.Errorf("ls -l /d:\n%s", long)
	}
	if got := on(t, sock, nil, "ls", "-l", "/d2"); !strings.HasSuffix(got, " /d2 -> /d\n") {
		t.Errorf("ls -l of a link: %q", got)
	}
	if got := on(t, sock, nil, "stat", "/dangling"); !strings.Contains(got, "path: /dangling -> ../no/such") || !strings.Contains(got, "type: symbolic link") {
		t.Errorf("stat of a link:\n%s", got)
	}
	var st statJSON
	if err := json.Unmarshal([]byte(on(t, sock, nil, "stat", "--json", "/d2")), &st); err != nil || st.Type != "symlink" || st.Target != "/d" || st.Size != 2 {
		t.Errorf("stat --json of a link: %+v, %v", st, err)
	}
	var ls []lsEntryJSON
	if err := json.Unmarshal([]byte(on(t, sock, nil, "ls", "--json", "/")), &ls); err != nil {
		t.Fatal(err)
	}
	for _, e := range ls {
		if e.Name == "dangling" && (e.Type != "symlink" || e.Target != "../no/such") {
			t.Errorf("ls --json: %+v", e)
		}
	}
	on(t, sock, nil, "rm", "/d2")
	for _, tc := range []struct {
		args []string
		msg  string // the whole line, or its start when it ends with "…"
	}{
		{[]string{"cat", "/dangling/x"}, "ustore: cat /dangling/x: too many levels of symbolic links"},
		{[]string{"ls", "/d/rel/x"}, "ustore: ls /d/rel/x: too many levels of symbolic links"},
		{[]string{"readlink", "/d/f"}, "ustore: readlink /d/f: invalid argument (readlink …"},
		{[]string{"cat", "/d/rel"}, "ustore: cat /d/rel: invalid argument (read …"},
		{[]string{"ln", "-s", "", "/empty"}, "ustore: ln /empty: no such file or directory"},
		{[]string{"ln", "-s", strings.Repeat("t", 4038), "/long"}, "ustore: ln /long: file name too long"},
		{[]string{"ln", "-s", "x", "/dangling"}, "ustore: ln /dangling: file exists"},
		{[]string{"ln", "/d", "/dl"}, "ustore: ln /d: operation not permitted"},
		{[]string{"readlink", "/d2"}, "ustore: readlink /d2: no such file or directory"},
	} {
		_, _, err := runIO(t, nil, append(tc.args, "--socket", sock)...)
		ok := message(err) == tc.msg
		if prefix, cut := strings.CutSuffix(tc.msg, "…"); cut {
			ok = strings.HasPrefix(message(err), prefix)
		}
		if exitCode(err) != 1 || !ok {
			t.Errorf("%v: exit %d, %q; want exit 1, %q", tc.args, exitCode(err), message(err), tc.msg)
		}
	}
}
