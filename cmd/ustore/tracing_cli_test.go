package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"ustore/internal/jaegertest"
)

// TestCommand_Client_Tracing_Jaeger: with OTEL_EXPORTER_OTLP_ENDPOINT set
// (in the host:port form), each client command is one trace in the real
// Jaeger: a root span "ustore <verb>" of service ustore-cli, the server's
// request spans its children (with their fsync and commit spans below
// them), and no request span of the commands in a trace of its own. In
// 'mkdir -p' the lookups that find no entry carry ustore.status=ENOENT
// but no span is marked failed; a command that fails marks its root span.
func TestCommand_Client_Tracing_Jaeger(t *testing.T) {
	j := jaegertest.Start(t)
	clearOTELEnvCmd(t)
	bin := buildUstore(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	p := startServe(t, bin, "--device", filepath.Join(dir, "d.img"), "--size", "256M", "--socket", sock,
		"--otlp-endpoint", j.OTLPEndpoint(), "--commit-interval", "5m")
	began := time.Now()

	local := filepath.Join(dir, "local.dat")
	data := bytes.Repeat([]byte("traced "), 20000/7) // two blocks and a bit
	if err := os.WriteFile(local, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cli := func(wantFail bool, args ...string) {
		t.Helper()
		c := exec.Command(bin, append(args, "--socket", sock)...)
		c.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT="+strings.TrimPrefix(j.OTLPEndpoint(), "http://"))
		out, err := c.CombinedOutput()
		if (err != nil) != wantFail {
			t.Fatalf("ustore %v: %v (want failure %v)\n%s", args, err, wantFail, out)
		}
		if wantFail && strings.Contains(string(out), "WARN") || !wantFail && len(out) > 0 {
			t.Fatalf("ustore %v printed:\n%s", args, out)
		}
	}
	cli(false, "mkdir", "-p", "/a/b/c")
	cli(false, "put", "--fsync", "/a/b/c/f", local)
	cli(true, "stat", "/a/missing")
	p.stop(t) // flushes the server's spans; each command flushed its own at exit

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	traces := map[string]*jaegertest.Trace{} // root span name → its trace
	var cliIDs []string
	for deadline := time.Now().Add(20 * time.Second); len(cliIDs) < 3 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		got, err := j.Traces(ctx, "ustore-cli", began, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		cliIDs = cliIDs[:0]
		for _, tr := range got {
			cliIDs = append(cliIDs, tr.ID)
		}
	}
	if len(cliIDs) != 3 {
		t.Fatalf("%d traces of ustore-cli in Jaeger, want 3 (one a command)", len(cliIDs))
	}
	for _, id := range cliIDs {
		tr, err := j.WaitTrace(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		root := tr.Root()
		if root == nil || root.Service != "ustore-cli" {
			t.Fatalf("trace %s: want one root, of ustore-cli:\n%s", id, tr)
		}
		traces[root.Name] = tr
		t.Logf("%s", tr)
	}

	// mkdir -p: a lookup a name; each misses and the mkdir makes it.
	mk := traces["ustore mkdir"]
	if mk == nil {
		t.Fatalf("no trace rooted at 'ustore mkdir' among %v", traceRoots(traces))
	}
	if got := mk.Root().Attributes["ustore.args"]; got != "/a/b/c" {
		t.Errorf("ustore mkdir: ustore.args = %s", got)
	}
	want := "ustore.lookup(a ENOENT) ustore.mkdir(a) ustore.lookup(b ENOENT) ustore.mkdir(b) ustore.lookup(c ENOENT) ustore.mkdir(c)"
	if got := requestChildren(mk.Root()); got != want {
		t.Errorf("ustore mkdir's children:\n%s\nwant\n%s\n%s", got, want, mk)
	}

	// put --fsync: every request under the command, the fsync's log
	// sync or commit below its request span.
	put := traces["ustore put"]
	if put == nil {
		t.Fatalf("no trace rooted at 'ustore put' among %v", traceRoots(traces))
	}
	wantPut := "ustore.resolve ustore.create ustore.write ustore.fsync ustore.rename ustore.fsync ustore.stat"
	if got := traceSpanNames(put.Root().Children); got != wantPut {
		t.Errorf("ustore put's children: %s\nwant %s\n%s", got, wantPut, put)
	}
	for _, s := range put.Root().Children {
		if s.Service != "ustore" {
			t.Errorf("put: child %s of service %s, want ustore", s.Name, s.Service)
		}
	}
	sfs := put.Find("store.fsync")
	if sfs == nil || sfs.Parent == nil || sfs.Parent.Parent != put.Root() ||
		(put.Find("logtree.sync_log") == nil && put.Find("journal.commit") == nil) {
		t.Errorf("put --fsync: want a store.fsync under a request span, with a log sync or commit:\n%s", put)
	}

	// No span of the two is failed; the failed stat's root is.
	for _, tr := range []*jaegertest.Trace{mk, put} {
		for _, s := range tr.Spans {
			if s.Status == "ERROR" {
				t.Errorf("%s: status ERROR (%s)\n%s", s.Name, s.StatusMsg, tr)
			}
		}
	}
	st := traces["ustore stat"]
	if st == nil || st.Root().Status != "ERROR" || !strings.Contains(st.Root().StatusMsg, "no such file") {
		t.Errorf("ustore stat of a missing path: want a root span with status ERROR:\n%v", st)
	} else if got := requestChildren(st.Root()); got != "ustore.resolve(ENOENT)" {
		t.Errorf("ustore stat's children: %s, want ustore.resolve(ENOENT)", got)
	}

	// Every request span the server made belongs to one of the three.
	all, err := j.Traces(ctx, "ustore", began, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range all {
		for _, s := range tr.Spans {
			if s.Service == "ustore" && s.Attributes["ustore.op"] != "" && (s.Parent == nil || s.Parent.Service != "ustore-cli") {
				t.Errorf("request span %s (trace %s) is not a child of a command's span", s.Name, tr.ID)
			}
		}
	}
}

// requestChildren lists s's children as "name(entry STATUS)".
func requestChildren(s *jaegertest.Span) string {
	var out []string
	for _, c := range s.Children {
		var in []string
		if n := c.Attributes["ustore.name"]; n != "" {
			in = append(in, n)
		}
		if st := c.Attributes["ustore.status"]; st != "" {
			in = append(in, st)
		}
		out = append(out, c.Name+"("+strings.Join(in, " ")+")")
	}
	return strings.Join(out, " ")
}

func traceRoots(traces map[string]*jaegertest.Trace) []string {
	var names []string
	for n := range traces {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
