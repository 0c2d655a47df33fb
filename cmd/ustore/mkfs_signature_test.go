package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// withMagic is a zero file of size bytes (at least the table's span) with
// s's magic at its offset.
func withMagic(t *testing.T, s signature, size int64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "target.img")
	b := make([]byte, max(size, signatureSpan))
	copy(b[s.off:], s.magic)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestProbeSignatures_EachSignature: every entry of the table is found, by
// its name and offset, on an otherwise zero file — and on nothing but zeros
// nothing is.
func TestProbeSignatures_EachSignature(t *testing.T) {
	for _, s := range signatures {
		t.Run(fmt.Sprintf("%s@%d", s.name, s.off), func(t *testing.T) {
			found, err := probePath(withMagic(t, s, 0))
			if err != nil {
				t.Fatal(err)
			}
			if len(found) != 1 || found[0].name != s.name || found[0].off != s.off {
				t.Fatalf("found %v, want %s at %d", found, s.name, s.off)
			}
		})
	}
	found, err := probeSignatures(bytes.NewReader(make([]byte, 4<<20)))
	if err != nil || len(found) != 0 {
		t.Fatalf("zeros: found %v, %v", found, err)
	}
}

// TestProbeSignatures_ShortTarget: a file shorter than the table's span is
// probed as far as it goes, a magic cut by its end is not found.
func TestProbeSignatures_ShortTarget(t *testing.T) {
	b := make([]byte, 1024+57) // ext4's two-byte magic cut after one byte
	b[510], b[511] = 0x55, 0xaa
	b[1024+56] = 0x53
	found, err := probeSignatures(bytes.NewReader(b))
	if err != nil || len(found) != 1 || found[0].off != 510 {
		t.Fatalf("found %v, %v; want only the DOS boot sector", found, err)
	}
	if found, err := probeSignatures(bytes.NewReader(nil)); err != nil || len(found) != 0 {
		t.Fatalf("an empty file: %v, %v", found, err)
	}
}

// TestProbeSignatures_RealTools: what mkfs.ext4 and mkswap write is found
// (the table agrees with the tools, not only with itself), and blkid -p,
// where present, sees the same type. Skipped where a tool is missing.
func TestProbeSignatures_RealTools(t *testing.T) {
	for _, tc := range []struct {
		tool  string
		args  []string
		want  string
		blkid string
	}{
		{"mkfs.ext4", []string{"-q", "-F"}, "ext2/ext3/ext4", "ext4"},
		{"mkswap", nil, "swap", "swap"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			bin, err := exec.LookPath(tc.tool)
			if err != nil {
				t.Skipf("%s not installed: %v", tc.tool, err)
			}
			path := filepath.Join(t.TempDir(), "target.img")
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, 64<<20); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(bin, append(tc.args, path)...).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", tc.tool, err, out)
			}
			found, err := probePath(path)
			if err != nil || len(found) == 0 || found[0].name != tc.want {
				t.Fatalf("after %s: found %v, %v; want %s", tc.tool, found, err, tc.want)
			}
			if blkid, err := exec.LookPath("blkid"); err == nil {
				out, _ := exec.Command(blkid, "-p", "-o", "value", "-s", "TYPE", path).Output()
				if got := strings.TrimSpace(string(out)); got != tc.blkid {
					t.Fatalf("blkid -p says %q, want %q", got, tc.blkid)
				}
			}
		})
	}
}
