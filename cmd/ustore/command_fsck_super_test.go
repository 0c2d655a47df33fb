package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// flipImageByte flips the byte at off of the image file at path.
func flipImageByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x08
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// newestPrimary returns the offset and sequence of the primary superblock
// slot (64 or 128 KiB; sequence at byte 48) with the higher sequence.
func newestPrimary(t *testing.T, path string) (int64, uint64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	best, seq := int64(0), uint64(0)
	for _, off := range []int64{64 << 10, 128 << 10} {
		b := make([]byte, 8)
		if _, err := f.ReadAt(b, off+48); err != nil {
			t.Fatal(err)
		}
		if n := binary.LittleEndian.Uint64(b); n > seq {
			best, seq = off, n
		}
	}
	return best, seq
}

// TestCommand_Fsck_SuperblockCopies: fsck reports a damaged copy of the
// newest superblock as a warning, exit code 1 (its mirror, 512 KiB further
// on, is sound, and mount rewrites the copy: nothing is lost); with both
// copies of the newest superblock damaged it fails with exit code 4:
// acknowledged state may be lost.
func TestCommand_Fsck_SuperblockCopies(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dev.img")
	if out, err := run(t, "mkfs", "--size", "64M", "--nodesize", "4k", path); err != nil {
		t.Fatalf("mkfs: %v\n%s", err, out)
	}
	off, seq := newestPrimary(t, path)
	flipImageByte(t, path, off+60)
	out, err := run(t, "fsck", path)
	if exitCode(err) != fsckWarnings || message(err) != "ustore: fsck "+path+": sound, with warnings (damage that lost nothing; see above)" ||
		!strings.Contains(out, "clean") || !strings.Contains(out, fmt.Sprintf("warning: superblock seq %d", seq)) ||
		!strings.Contains(out, fmt.Sprint(off)) {
		t.Fatalf("fsck with one damaged superblock copy: %v\n%s", err, out)
	}
	if out, err := run(t, "fsck", path); err != nil || strings.Contains(out, "warning") {
		t.Fatalf("fsck after the copy was rewritten: %v\n%s", err, out)
	}
	flipImageByte(t, path, off+60)
	flipImageByte(t, path, off+512<<10+60)
	out, err = run(t, "fsck", path)
	// (On this image the older superblock is mkfs's, which has no root
	// directory yet: the mount fails, and that is the problem found.)
	if exitCode(err) != fsckProblems || !strings.Contains(out, "problems:\nmount "+path+": store: no root directory") || strings.Contains(out, "clean") {
		t.Fatalf("fsck with both copies of the newest superblock damaged: exit %d, %v\n%s", exitCode(err), err, out)
	}
}
