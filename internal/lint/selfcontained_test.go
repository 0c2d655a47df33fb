package lint

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// outside lists what a shipped file must not mention: the session's
// working notes and the founding design document, which live outside the
// repository, so a clone never has them (issue 17). docs/ARCHITECTURE.md
// is the repository's own account of the design; a measured fact goes
// into the sentence that uses it (or docs/BENCHMARKS.md), a Linux patch
// is cited by its title. The strings are split so that this file does
// not match itself.
var outside = []string{
	"../" + "shared/",
	"shared/" + "notes",
	"shared/" + "reference",
	"DESIGN" + ".md",
	"STYLE" + ".md",
	"ring-" + "facts.md",
	"ebpf-otel-jaeger-" + "facts",
	"log-chain-" + "facts",
	"peer-" + "baselines",
}

// trackedFiles returns the repository's tracked files, and the new ones
// git does not ignore (git ls-files), relative to root, or nil when git cannot list them.
func trackedFiles(t *testing.T, root string) []string {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		return nil
	}
	var files []string
	for _, f := range bytes.Split(out, []byte{0}) {
		if len(f) > 0 {
			files = append(files, string(f))
		}
	}
	return files
}

// outsideRefs returns "file:line: text" for every line of files (relative
// to root) outside testdata that mentions a string of outside.
func outsideRefs(t *testing.T, root string, files []string) []string {
	t.Helper()
	var found []string
	for _, f := range files {
		if strings.Contains("/"+f, "/testdata/") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			if os.IsNotExist(err) {
				continue // deleted in the work tree, not yet committed
			}
			t.Fatal(err)
		}
		if bytes.IndexByte(data, 0) >= 0 {
			continue // binary: a generated BPF object, an image
		}
		for i, line := range strings.Split(string(data), "\n") {
			for _, s := range outside {
				if strings.Contains(line, s) {
					found = append(found, f+":"+strconv.Itoa(i+1)+": "+strings.TrimSpace(line))
					break
				}
			}
		}
	}
	return found
}

// TestRepository_SelfContained fails when a tracked file outside testdata
// points outside the repository (the notes, the reference patches' copies,
// the founding design): a clone would have a dangling reference.
func TestRepository_SelfContained(t *testing.T) {
	root := "../.."
	files := trackedFiles(t, root)
	if files == nil {
		t.Skip("not a git checkout: no tracked files to check")
	}
	if len(files) < 50 {
		t.Fatalf("git lists only %d files: is the walk rooted at the repository?", len(files))
	}
	for _, ref := range outsideRefs(t, root, files) {
		t.Errorf("%s: refers outside the repository; say it here (docs/ARCHITECTURE.md, docs/BENCHMARKS.md) or cite a public source", ref)
	}
}

// TestRepository_SelfContained_CatchesViolation proves the check can fail.
func TestRepository_SelfContained_CatchesViolation(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"README.md":            "The full design is `../" + "shared/DESIGN" + ".md`.\n",
		"docs/ARCHITECTURE.md": "# Architecture\n",
		"x/testdata/case":      "see ../" + "shared/" + "notes/x\n",
	}
	var names []string
	for name, text := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	got := outsideRefs(t, dir, names)
	if len(got) != 1 || !strings.HasPrefix(got[0], "README.md:1:") {
		t.Fatalf("outsideRefs = %q, want the README line only", got)
	}
}
