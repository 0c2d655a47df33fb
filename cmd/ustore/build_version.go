package main

// What `ustore --version` prints: the build (module version, the VCS
// revision the binary was built from and whether the tree had changes
// then, from the build info Go records) and the on-disk format version
// the binary reads and writes, the one number an operator needs before
// moving a data file to another binary.

import (
	"fmt"
	"runtime/debug"

	"ustore/engine"
)

// buildInfo is the build of this binary.
type buildInfo struct {
	Version  string // the main module's version; "devel" when built from a tree
	Revision string // the VCS revision; "unknown" without VCS stamping (go run, -buildvcs=false)
	Modified bool   // the tree had uncommitted changes at build time
	Format   int    // the on-disk format version (engine.FormatVersion)
}

// readBuildInfo reads the build info Go recorded in the binary.
func readBuildInfo() buildInfo {
	b := buildInfo{Version: "devel", Revision: "unknown", Format: engine.FormatVersion}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	// "(devel)" is what go build records for the main module built from
	// its own tree.
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		b.Version = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the line after "ustore ": devel (revision 1a2b…, modified), format 2.
func (b buildInfo) String() string {
	mod := ""
	if b.Modified {
		mod = ", modified"
	}
	return fmt.Sprintf("%s (revision %s%s), on-disk format %d", b.Version, b.Revision, mod, b.Format)
}
