package lint

import (
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
	walkImports(t, "../..", func(path, pkg, imp string) {
		for mod, owner := range owners {
			if imp == mod || strings.HasPrefix(imp, mod+"/") {
				checked++
				if pkg != owner {
					t.Errorf("%s imports %s, which only %s may import", path, imp, owner)
				}
			}
		}
	})
	if checked == 0 {
		t.Fatal("no import of an owned module found: is the walk rooted at the repository?")
	}
}
