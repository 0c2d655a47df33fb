package readmetest

import (
	"errors"
	"reflect"
	"testing"
)

func TestParseBlocks_Markers(t *testing.T) {
	md := "# t\n\n" +
		"<!-- readme-walk: skip (runs forever) -->\n```sh\nmake run\n```\n\n" +
		"```\na diagram\n```\n" +
		"```sh\n./ustore ls /\n./ustore df\n```\n" +
		"<!-- readme-walk: check-trace ustore.fsync -->\n\n```sh\nbin/jaeger &\n```\n" +
		"<!-- readme-walk: needs /dev/fuse -->\n```sh\n./ustore mount mnt &\n```\n"
	got, err := ParseBlocks(md)
	if err != nil {
		t.Fatal(err)
	}
	want := []Block{
		{Line: 4, Body: "make run\n", Skip: "runs forever"},
		{Line: 11, Body: "./ustore ls /\n./ustore df\n"},
		{Line: 17, Body: "bin/jaeger &\n", CheckTrace: "ustore.fsync"},
		{Line: 21, Body: "./ustore mount mnt &\n", Needs: "/dev/fuse"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

// TestParseBlocks_BadMarkers: a marker that would skip or check nothing is
// an error, not ignored.
func TestParseBlocks_BadMarkers(t *testing.T) {
	for _, md := range []string{
		"<!-- readme-walk: skip -->\n```sh\nx\n```\n",                    // no reason
		"<!-- readme-walk: skip () -->\n```sh\nx\n```\n",                 // empty reason
		"<!-- readme-walk: skp (typo) -->\n```sh\nx\n```\n",              // unknown verb
		"<!-- readme-walk: check-trace -->\n```sh\nx\n```\n",             // no span
		"<!-- readme-walk: needs dev/fuse -->\n```sh\nx\n```\n",          // not absolute
		"<!-- readme-walk: needs -->\n```sh\nx\n```\n",                   // no path
		"<!-- readme-walk: skip (x) -->\nsome text\n```sh\nx\n```\n",     // before text
		"<!-- readme-walk: skip (x) -->\n```\nx\n```\n",                  // before a non-sh block
		"<!-- readme-walk: skip (x) -->\n",                               // before nothing
		"<!-- readme-walk: skip (x) -->\n<!-- readme-walk: skip (y) -->", // two
	} {
		if _, err := ParseBlocks(md); !errors.Is(err, ErrMarker) {
			t.Errorf("%q: %v, want ErrMarker", md, err)
		}
	}
	if _, err := ParseBlocks("```sh\nnever closed\n"); err == nil {
		t.Error("an unclosed block parsed")
	}
}
