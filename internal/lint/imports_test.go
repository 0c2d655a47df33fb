package lint

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "ustore"

// allowed lists, for every package, the project packages its non-test files
// may import directly — docs/ARCHITECTURE.md's diagram as a table. A new
// package must be added here (and to that diagram) before it builds green.
var allowed = map[string][]string{
	"ring":            {"trace"},
	"dev":             {},
	"dev/memdev":      {"dev"},
	"dev/sysdev":      {"dev"},
	"dev/devtest":     {"dev"},
	"dev/uringdev":    {"dev", "dev/sysdev", "ring"},
	"dev/devopen":     {"dev", "dev/sysdev", "dev/uringdev", "ring"},
	"trace":           {},
	"lock":            {"trace"},
	"internal/assert": {},
	"journal":         {"trace"},
	"evict":           {"trace"},
	"engine":          {"journal", "evict", "dev", "lock", "trace", "internal/assert"},
	"logtree":         {"engine", "journal", "evict", "dev", "lock", "trace", "internal/assert"},
	"store":           {"logtree", "engine", "evict", "journal", "dev", "dev/devopen", "lock", "trace", "internal/assert"},
	"proto":           {"trace", "internal/assert"},
	"server":          {"proto", "store", "trace", "internal/assert"},
	"client":          {"proto", "trace"},
	// fusefs is `ustore mount`: the store through FUSE, a client of the
	// server like the CLI (go-fuse is its module alone).
	"fusefs":          {"client", "proto"},
	"ebpf":            {"lock", "trace"},
	"bench":           {"client", "trace"},
	"bench/ringbench": {"ring", "dev"},
	"cmd/ustore":      {"*"},
	"internal/lint":   {},
	// internal/jaegertest runs Jaeger for tests; it tests any package, so
	// it imports none.
	"internal/jaegertest": {},
	// internal/readmetest walks README.md's blocks with the built ustore
	// binary; only its tests import (internal/jaegertest).
	"internal/readmetest": {},
	// bench/storebench is the `ustore bench store` workloads on the filesystem.
	"bench/storebench": {"store", "dev", "dev/devopen", "bench/layout"},
	// bench/servicebench is `ustore bench service`: a real server and
	// client, the store in process, on a device file or a memdev.
	"bench/servicebench": {"client", "proto", "server", "store", "dev", "dev/devopen", "dev/memdev", "bench/layout"},
	// bench/layout writes the device file of those two in full once.
	"bench/layout": {"dev"},
	// bench/fsyncbench is `ustore bench fsync-*`: the workloads of the
	// fsync patches on a running server (through the client) or a kernel
	// filesystem's directory (its tests start a server in process).
	"bench/fsyncbench": {"client"},
	// bench/metabench is `ustore bench meta`: metadata ops on a running
	// server (through the client) or a kernel directory, with the echo
	// process of bench/servicebench as the round trip's reference, and
	// bench/fsyncbench's latency summary.
	"bench/metabench": {"client", "proto", "bench/servicebench", "bench/fsyncbench"},
	// bench/readbench is `ustore bench seqread` and `ustore bench zipf`:
	// reads of a running server through the client, and its /metrics
	// (read with bench/fsyncbench's scraper).
	"bench/readbench": {"client", "bench/fsyncbench"},
	// bench/jaegershot is the traced client workload of
	// bench/jaeger-screenshot.sh: a client of a running server.
	"bench/jaegershot": {"client", "trace"},
	// bench/seqwr is the 2013 btrfs unmount patch's seqwr workload for
	// bench/unmount.sh: a client of a running server, or a directory.
	"bench/seqwr": {"client"},
}

// everywhere lists the packages any package may import: leaves that import
// nothing of ustore's, so they add no edge that could point up.
// internal/assert is one (programmer errors panic through it in every
// layer, ring and dev included).
var everywhere = []string{"internal/assert"}

// never lists what a package must not reach even transitively: the rules
// under the diagram in docs/ARCHITECTURE.md.
var never = map[string][]string{
	"engine":  {"logtree", "store", "server", "proto", "ring"},
	"journal": {"ring", "engine", "logtree", "store"},
	"logtree": {"ring", "store", "server"},
	"ring":    {"dev", "engine", "logtree", "journal", "store"},
	"dev":     {"ring", "engine", "logtree", "journal", "store"},
	"proto":   {"store", "engine"},
	"client":  {"store", "engine"},
	"trace":   {"*"},
	"lock":    {"engine", "journal", "logtree", "store", "ring", "dev"},
	"evict":   {"engine", "journal", "logtree", "store", "ring", "dev"},
}

// projectImports parses every non-test .go file of the repository and
// returns package → project packages it imports.
func projectImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	imports := map[string][]string{}
	walkImports(t, root, func(_, pkg, imp string) {
		if _, ok := imports[pkg]; !ok {
			imports[pkg] = nil
		}
		if imp == module || strings.HasPrefix(imp, module+"/") {
			imports[pkg] = append(imports[pkg], strings.TrimPrefix(strings.TrimPrefix(imp, module), "/"))
		}
	})
	return imports
}

// walkImports calls fn for each import of every non-test .go file under
// root (dot directories, testdata and the tools module left out), with
// the file's path and its package's directory relative to root; a file
// with no import gets one call with imp "".
func walkImports(t *testing.T, root string, fn func(path, pkg, imp string)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "tools") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		if len(f.Imports) == 0 {
			fn(path, pkg, "")
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			fn(path, pkg, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestImports_FollowDesign(t *testing.T) {
	imports := projectImports(t, "../..")
	if len(imports) < 5 {
		t.Fatalf("found only %d packages: is the walk rooted at the repository?", len(imports))
	}
	pkgs := make([]string, 0, len(imports))
	for p := range imports {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, pkg := range pkgs {
		allow, ok := allowed[pkg]
		if !ok {
			t.Errorf("package %s is not in the import table: add it to docs/ARCHITECTURE.md's diagram and to allowed", pkg)
			continue
		}
		for _, imp := range imports[pkg] {
			if !contains(allow, imp) && !contains(everywhere, imp) {
				t.Errorf("%s imports %s, against the direction in docs/ARCHITECTURE.md (allowed: %v)", pkg, imp, allow)
			}
		}
	}
	for _, leaf := range everywhere {
		if len(imports[leaf]) != 0 {
			t.Errorf("%s may be imported everywhere, so it must import no ustore package; it imports %v", leaf, imports[leaf])
		}
	}
	for pkg, forbidden := range never {
		for reached := range closure(imports, pkg) {
			if contains(forbidden, reached) && !contains(everywhere, reached) {
				t.Errorf("%s reaches %s (transitively); docs/ARCHITECTURE.md forbids it", pkg, reached)
			}
		}
	}
}

// TestImports_CatchesViolation proves the check can fail: a made-up engine
// that imports ring is caught directly and transitively.
func TestImports_CatchesViolation(t *testing.T) {
	bad := map[string][]string{"engine": {"dev/uringdev"}, "dev/uringdev": {"ring", "dev"}}
	if contains(allowed["engine"], "dev/uringdev") {
		t.Fatal("engine may import dev/uringdev?")
	}
	if _, reached := closure(bad, "engine")["ring"]; !reached || !contains(never["engine"], "ring") {
		t.Fatal("transitive engine → ring not caught")
	}
}

func closure(imports map[string][]string, from string) map[string]struct{} {
	seen := map[string]struct{}{}
	stack := append([]string(nil), imports[from]...)
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if _, ok := seen[p]; ok {
			continue
		}
		seen[p] = struct{}{}
		stack = append(stack, imports[p]...)
	}
	return seen
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s || x == "*" {
			return true
		}
	}
	return false
}
