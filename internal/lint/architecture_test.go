package lint

import (
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// TestArchitecture_Table checks that the import table in
// docs/ARCHITECTURE.md (between its "imports table" markers) lists exactly
// the packages of allowed, each with exactly its allowed imports, so that
// the page a newcomer reads is the rule the build enforces.
func TestArchitecture_Table(t *testing.T) {
	data, err := os.ReadFile("../../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	begin := strings.Index(doc, "<!-- imports table: begin -->")
	end := strings.Index(doc, "<!-- imports table: end -->")
	if begin < 0 || end < begin {
		t.Fatal("docs/ARCHITECTURE.md: no imports table markers")
	}
	got := map[string][]string{}
	for _, line := range strings.Split(doc[begin:end], "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue // the header, its rule, the markers
		}
		pkg := strings.Trim(strings.TrimSpace(cells[1]), "`")
		var imps []string
		switch c := strings.TrimSpace(cells[2]); c {
		case "—":
		case "any":
			imps = []string{"*"}
		default:
			for _, imp := range strings.Split(c, ",") {
				imps = append(imps, strings.Trim(strings.TrimSpace(imp), "`"))
			}
		}
		if _, dup := got[pkg]; dup {
			t.Errorf("docs/ARCHITECTURE.md lists %s twice", pkg)
		}
		got[pkg] = imps
	}
	for pkg, allow := range allowed {
		want := normalize(allow)
		imps, ok := got[pkg]
		if !ok {
			t.Errorf("docs/ARCHITECTURE.md's import table lacks %s (allowed: %v)", pkg, allow)
			continue
		}
		if !reflect.DeepEqual(normalize(imps), want) {
			t.Errorf("docs/ARCHITECTURE.md: %s may import %v; the table says %v", pkg, want, normalize(imps))
		}
	}
	for pkg := range got {
		if _, ok := allowed[pkg]; !ok {
			t.Errorf("docs/ARCHITECTURE.md lists %s, which is not in allowed", pkg)
		}
	}
}

// normalize sorts a package's imports, without the everywhere packages
// (the table leaves those to its heading).
func normalize(imps []string) []string {
	out := []string{}
	for _, p := range imps {
		if !contains(everywhere, p) || p == "*" {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}
