package main

import (
	"testing"

	"ustore/engine"
)

func TestBuildInfo_String_Cases(t *testing.T) {
	for _, tc := range []struct {
		b    buildInfo
		want string
	}{
		{buildInfo{"devel", "unknown", false, 2}, "devel (revision unknown), on-disk format 2"},
		{buildInfo{"v1.2.0", "0123abcd", true, 3}, "v1.2.0 (revision 0123abcd, modified), on-disk format 3"},
	} {
		if got := tc.b.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.b, got, tc.want)
		}
	}
}

// TestRoot_Version: `ustore --version` and `-v` print one line, the build
// and the format this binary writes; `ustore version` still works.
func TestRoot_Version(t *testing.T) {
	want := "ustore " + readBuildInfo().String() + "\n"
	if readBuildInfo().Format != engine.FormatVersion {
		t.Fatalf("format %d, want %d", readBuildInfo().Format, engine.FormatVersion)
	}
	for _, flag := range []string{"--version", "-v"} {
		out, err := run(t, flag)
		if err != nil || out != want {
			t.Errorf("%s: %v %q, want %q", flag, err, out, want)
		}
	}
	if out, err := run(t, "version"); err != nil || len(out) == 0 {
		t.Errorf("version: %v %q", err, out)
	}
}
