package evict

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPackage_ImportsNoUstorePackage: evict sits at the bottom of the
// import graph (docs/ARCHITECTURE.md), next to trace; it imports no ustore package
// but internal/assert (a leaf every package may import, internal/lint),
// not even in its tests, so the engine and store can both use it.
func TestPackage_ImportsNoUstorePackage(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files found: %v", err)
	}
	for _, name := range files {
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path == "ustore/internal/assert" {
				continue
			}
			if path == "ustore" || strings.HasPrefix(path, "ustore/") {
				t.Errorf("%s imports %s", name, path)
			}
		}
	}
}
