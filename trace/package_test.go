package trace

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// projectImports returns the ustore packages the given Go source imports.
func projectImports(fset *token.FileSet, name string, src any) ([]string, error) {
	f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	var found []string
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			return nil, err
		}
		if path == "ustore" || strings.HasPrefix(path, "ustore/") {
			found = append(found, path)
		}
	}
	return found, nil
}

// TestPackage_Imports_NoProjectPackage checks Invariant 4 on every non-test
// file of the package, whatever its build constraints: trace sits below every
// other package (docs/ARCHITECTURE.md), so it may import none of them.
func TestPackage_Imports_NoProjectPackage(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		found, err := projectImports(fset, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(found) > 0 {
			t.Errorf("%s imports %v; trace must import no ustore package", name, found)
		}
		checked++
	}
	if checked < 3 {
		t.Fatalf("checked only %d files: is the test running in the package directory?", checked)
	}
}

// TestPackage_Imports_CatchesProjectPackage proves the check above can fail.
func TestPackage_Imports_CatchesProjectPackage(t *testing.T) {
	src := "package trace\nimport (\n\t\"sync\"\n\t\"ustore/engine\"\n)\n"
	found, err := projectImports(token.NewFileSet(), "bad.go", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0] != "ustore/engine" {
		t.Fatalf("found %v, want [ustore/engine]", found)
	}
}
