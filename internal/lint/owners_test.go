package lint

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// owners lists third-party modules that one project package owns: no
// other package's non-test files may import them (one package owns
// cilium/ebpf: docs/ARCHITECTURE.md). Test files may, to check the owner from outside.
var owners = map[string]string{
	"github.com/cilium/ebpf":       "ebpf",
	"github.com/hanwen/go-fuse/v2": "fusefs",
}

// TestImports_OwnedModules checks owners over the repository.
func TestImports_OwnedModules(t *testing.T) {
	checked := 0
	err := filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "../.." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "tools") {
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
		rel, _ := filepath.Rel("../..", filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for mod, owner := range owners {
				if p == mod || strings.HasPrefix(p, mod+"/") {
					checked++
					if pkg != owner {
						t.Errorf("%s imports %s, which only %s may import", path, p, owner)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no import of an owned module found: is the walk rooted at the repository?")
	}
}
