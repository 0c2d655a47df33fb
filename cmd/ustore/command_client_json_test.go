package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// jsonKeys decodes out as one JSON object (or an array of them) and
// returns each object's keys, sorted.
func jsonKeys(t *testing.T, out string) [][]string {
	t.Helper()
	var objs []map[string]json.RawMessage
	if strings.HasPrefix(out, "[") {
		if err := json.Unmarshal([]byte(out), &objs); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	} else {
		var o map[string]json.RawMessage
		if err := json.Unmarshal([]byte(out), &o); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		objs = append(objs, o)
	}
	var keys [][]string
	for _, o := range objs {
		var k []string
		for name := range o {
			k = append(k, name)
		}
		slices.Sort(k)
		keys = append(keys, k)
	}
	return keys
}

// The field names of each command's --json output, as docs/CLI.md lists
// them. Scripts depend on them: a change here is a change of the
// documented format.
var (
	statFields    = []string{"atime", "blocks", "btime", "ctime", "generation", "gid", "ino", "mode", "mtime", "nlink", "path", "size", "type", "uid"}
	linkFields    = append([]string{"target"}, statFields...) // a symbolic link's
	lsFields      = append([]string{"name"}, statFields...)
	dfFields      = []string{"avail", "block_size", "dirty", "size", "used"}
	versionFields = []string{"arch", "backend", "format", "go", "kernel", "modified", "os", "reason", "revision", "version"}
	fsckFields    = []string{"device", "exit_code", "free_bytes", "items", "nodes", "problems", "replay", "scrub", "status", "trees", "used_bytes", "warnings"}
)

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

// TestClient_JSON_Fields: ls, stat, df and version print --json objects
// with exactly the documented fields.
func TestClient_JSON_Fields(t *testing.T) {
	sock := startTestServer(t)
	on(t, sock, nil, "mkdir", "/d")
	on(t, sock, strings.NewReader("hello"), "put", "/d/f")
	on(t, sock, nil, "ln", "-s", "d/f", "/l")
	for _, tc := range []struct {
		args   []string
		fields []string
		n      int // objects
	}{
		{[]string{"stat", "--json", "/d/f"}, statFields, 1},
		{[]string{"stat", "--json", "/l"}, linkFields, 1},
		{[]string{"ls", "--json", "/l"}, append([]string{"name"}, linkFields...), 1},
		{[]string{"ls", "--json", "/d"}, lsFields, 1},
		{[]string{"ls", "--json", "/d/"}, lsFields, 1},
		{[]string{"ls", "--json", "/d/f"}, lsFields, 1},
		{[]string{"df", "--json"}, dfFields, 1},
	} {
		keys := jsonKeys(t, on(t, sock, nil, tc.args...))
		if len(keys) != tc.n {
			t.Errorf("%v: %d objects, want %d", tc.args, len(keys), tc.n)
		}
		for _, k := range keys {
			if !slices.Equal(k, sorted(tc.fields)) {
				t.Errorf("%v: fields %v, want %v", tc.args, k, sorted(tc.fields))
			}
		}
	}
	out, err := run(t, "version", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if k := jsonKeys(t, out); !slices.Equal(k[0], sorted(versionFields)) {
		t.Errorf("version --json: fields %v, want %v", k[0], sorted(versionFields))
	}
	var v versionJSON
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Backend != "io_uring" || v.Go == "" || v.Kernel == "" {
		t.Errorf("version --json: %+v %v", v, err)
	}
}

// TestClient_Ls_JSON: ls --json is one array, in creation order, over more
// names than one readdir page; an empty directory is [].
func TestClient_Ls_JSON(t *testing.T) {
	sock := startTestServer(t)
	on(t, sock, nil, "mkdir", "/empty", "/d", "/d/sub")
	on(t, sock, strings.NewReader("12345"), "put", "/d/f")
	if out := on(t, sock, nil, "ls", "--json", "/empty"); out != "[]\n" {
		t.Fatalf("ls --json of an empty directory: %q", out)
	}
	var es []lsEntryJSON
	out := on(t, sock, nil, "ls", "--json", "/d")
	if err := json.Unmarshal([]byte(out), &es); err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[0].Name != "sub" || es[0].Path != "/d/sub" || es[0].Type != "directory" || es[0].Mode != "0755" ||
		es[1].Name != "f" || es[1].Path != "/d/f" || es[1].Type != "file" || es[1].Size != 5 || es[1].Nlink != 1 || es[1].Mtime == "" {
		t.Fatalf("ls --json /d: %+v", es)
	}
	// It reads as the other --json outputs, indented by two.
	if !strings.HasPrefix(out, "[\n  {\n    \"name\": \"sub\",\n    \"path\": \"/d/sub\",") || !strings.HasSuffix(out, "\n  }\n]\n") {
		t.Fatalf("ls --json layout:\n%s", out)
	}
	const n = 1500 // more than one page of 1024
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("/many/dir-%04d", n-i) // not in name order
	}
	on(t, sock, nil, append([]string{"mkdir", "-p"}, names...)...)
	es = nil
	if err := json.Unmarshal([]byte(on(t, sock, nil, "ls", "--json", "/many")), &es); err != nil {
		t.Fatal(err)
	}
	if len(es) != n {
		t.Fatalf("ls --json of %d names: %d", n, len(es))
	}
	for i, e := range es {
		if e.Path != names[i] {
			t.Fatalf("entry %d: %q, want %q", i, e.Path, names[i])
		}
	}
}

// TestClient_Ls_Human: ls -lh prints sizes as ls -lh does (and as df -h);
// -h alone changes nothing; --help is still help.
func TestClient_Ls_Human(t *testing.T) {
	sock := startTestServer(t)
	on(t, sock, strings.NewReader("tiny"), "put", "/a")
	on(t, sock, nil, "truncate", "/a", "5000")
	on(t, sock, strings.NewReader("x"), "put", "/b")
	on(t, sock, nil, "truncate", "/b", "3M")
	on(t, sock, strings.NewReader("seven77"), "put", "/c")
	out := on(t, sock, nil, "ls", "-lh")
	re := regexp.MustCompile(`(?m)^-rw-r--r-- 1 (\S+) +\d{4}-\d\d-\d\d \d\d:\d\d ([abc])$`)
	got := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		got[m[2]] = m[1]
	}
	if got["a"] != "4.9K" || got["b"] != "3.0M" || got["c"] != "7" {
		t.Fatalf("ls -lh: sizes %v\n%s", got, out)
	}
	if out := on(t, sock, nil, "ls", "-l"); !strings.Contains(out, " 5000 ") || !strings.Contains(out, " 3145728 ") {
		t.Fatalf("ls -l:\n%s", out)
	}
	if out := on(t, sock, nil, "ls", "-h"); out != "a\nb\nc\n" {
		t.Fatalf("ls -h: %q", out)
	}
	out, _, err := runIO(t, nil, "ls", "--help")
	if err != nil || !strings.Contains(out, "-h, --human-readable") || !strings.Contains(out, "--json") {
		t.Fatalf("ls --help: %v\n%s", err, out)
	}
}
