package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"ustore/dev/devopen"
	"ustore/engine"
	"ustore/store"
)

// withImageStore opens the image at path as a store for the duration of
// fn, and closes it (committing what fn did).
func withImageStore(t *testing.T, path string, fn func(s *store.Store)) {
	t.Helper()
	d, _, err := devopen.Open(path, devopen.Options{Backend: devopen.Syscall, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s, err := store.Open(d, store.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	fn(s)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// firstDataBlock returns the device offset of inode ino's first regular
// extent.
func firstDataBlock(t *testing.T, s *store.Store, ino store.Ino) uint64 {
	t.Helper()
	var at uint64
	err := s.Engine().Tree(engine.FSTreeID).Iterate(engine.InoKey(ino, engine.TypeExtentData, 0), func(k engine.Key, b []byte) bool {
		if k.Ino() != ino || k.Type != engine.TypeExtentData {
			return false
		}
		if x, err := engine.DecodeFileExtent(b); err == nil && x.Type == engine.ExtentRegular {
			at = uint64(x.DiskBytenr)
			return false
		}
		return true
	})
	if err != nil || at == 0 {
		t.Fatalf("no data extent for inode %d: %v", ino, err)
	}
	return at
}

// flipFileByte flips one bit of the file at path, at off.
func flipFileByte(t *testing.T, path string, off int64) {
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
	b[0] ^= 0x01
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestCommand_Fsck_Data: a flipped bit in a data block leaves plain fsck
// clean (it reads no data), while fsck --data names the inode, the file
// offset and the path, reports the bytes it read and its speed, and exits
// 4.
func TestCommand_Fsck_Data(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dev.img")
	if out, err := run(t, "mkfs", "--size", "64M", "--nodesize", "4k", path); err != nil {
		t.Fatalf("mkfs: %v\n%s", err, out)
	}
	var ino store.Ino
	var disk uint64
	withImageStore(t, path, func(s *store.Store) {
		if _, err := s.Mkdir(store.RootIno, "dir", 0o755); err != nil {
			t.Fatal(err)
		}
		a, err := s.Put(context.Background(), "/dir/victim", make([]byte, 256<<10), true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(context.Background(), "/other", []byte(strings.Repeat("o", 100<<10)), true); err != nil {
			t.Fatal(err)
		}
		if err := s.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		ino, disk = a.Ino, firstDataBlock(t, s, a.Ino)
	})
	out, err := run(t, "fsck", "--data", path)
	if err != nil || !strings.Contains(out, "clean") || !strings.Contains(out, "0 bad blocks") ||
		!strings.Contains(out, fmt.Sprintf("scrubbed %d bytes", 256<<10+100<<10)) || !strings.Contains(out, "MB/s") {
		t.Fatalf("fsck --data of a clean filesystem: %v\n%s", err, out)
	}

	const blockInFile = 5
	flipFileByte(t, path, int64(disk)+blockInFile*4096+123)
	before := fileHash(t, path)
	if out, err := run(t, "fsck", path); err != nil || !strings.Contains(out, "clean") {
		t.Fatalf("plain fsck reads no data and should pass: %v\n%s", err, out)
	}
	out, err = run(t, "fsck", "--data", path)
	want := fmt.Sprintf("inode %d offset %d (device block %d) /dir/victim: ", ino, blockInFile*4096, disk+blockInFile*4096)
	if exitCode(err) != fsckProblems || !strings.Contains(out, want) || !strings.Contains(out, "1 bad blocks") || strings.Contains(out, "clean") {
		t.Fatalf("fsck --data with a damaged data block: %v, want a line %q\n%s", err, want, out)
	}
	if fileHash(t, path) != before {
		t.Fatal("fsck changed the image")
	}
}

// TestCommand_Fsck_JSON: --json is one object with the documented fields:
// counts, warnings and problems as lists (a bad data block with its
// inode, offsets and paths), the status and the exit code, which the
// command exits with too; a device it cannot check is status "error", exit
// code 8.
func TestCommand_Fsck_JSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dev.img")
	if out, err := run(t, "mkfs", "--size", "64M", "--nodesize", "4k", path); err != nil {
		t.Fatalf("mkfs: %v\n%s", err, out)
	}
	var ino, disk uint64
	withImageStore(t, path, func(s *store.Store) {
		a, err := s.Put(context.Background(), "/victim", make([]byte, 64<<10), true)
		if err != nil {
			t.Fatal(err)
		}
		ino, disk = uint64(a.Ino), firstDataBlock(t, s, a.Ino)
	})
	decode := func(out string) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		want := fsckFields
		if m["status"] == "error" {
			want = append([]string{"error"}, want...)
		}
		if k := jsonKeys(t, out)[0]; !slices.Equal(k, sorted(want)) {
			t.Errorf("fsck --json: fields %v, want %v", k, sorted(want))
		}
		return m
	}
	out, err := run(t, "fsck", "--json", "--data", path)
	m := decode(out)
	if err != nil || m["status"] != "clean" || m["exit_code"] != 0.0 || len(m["problems"].([]any)) != 0 ||
		m["scrub"].(map[string]any)["bytes"] != float64(64<<10) {
		t.Fatalf("fsck --json of a clean filesystem: %v\n%s", err, out)
	}

	flipFileByte(t, path, int64(disk)+2*4096)
	out, err = run(t, "fsck", "--json", "--data", path)
	m = decode(out)
	if exitCode(err) != fsckProblems || m["status"] != "problems" || m["exit_code"] != 4.0 {
		t.Fatalf("fsck --json with a bad block: exit %d, %v\n%s", exitCode(err), err, out)
	}
	var rep fsckReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Kind != "data" || rep.Problems[0].Message == "" || rep.Scrub.BadCount != 1 {
		t.Fatalf("problems: %+v", rep.Problems)
	}
	want := fsckBadBlock{Ino: ino, Offset: 2 * 4096, Bytenr: disk + 2*4096, Paths: []string{"/victim"}}
	if b := rep.Problems[0].Block; b == nil || fmt.Sprint(*b) != fmt.Sprint(want) {
		t.Fatalf("bad block %+v, want %+v", b, want)
	}

	out, err = run(t, "fsck", "--json", filepath.Join(t.TempDir(), "missing.img"))
	m = decode(out)
	if exitCode(err) != fsckError || m["status"] != "error" || !strings.Contains(m["error"].(string), "no such file or directory") {
		t.Fatalf("fsck --json of a missing file: exit %d, %v\n%s", exitCode(err), err, out)
	}
}

// TestCommand_Fsck_ExitCodes: "could not check" (8) is apart from "found
// problems" (4, TestCommand_Fsck_Data) and from warnings (1,
// TestCommand_Fsck_SuperblockCopies), each with one line on stderr; bad
// flags stay 2.
func TestCommand_Fsck_ExitCodes(t *testing.T) {
	dir := t.TempDir()
	random := filepath.Join(dir, "random.img")
	if err := os.WriteFile(random, bytes.Repeat([]byte("not ustore "), 100000), 0o600); err != nil {
		t.Fatal(err)
	}
	formatted := filepath.Join(dir, "dev.img")
	if out, err := run(t, "mkfs", "--size", "64M", "--nodesize", "4k", formatted); err != nil {
		t.Fatalf("mkfs: %v\n%s", err, out)
	}
	lock, err := devopen.LockDevice(formatted)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"fsck", random}, fsckError, "ustore: " + random + ": not a ustore filesystem (no superblock copy carries ustore's magic number)"},
		{[]string{"fsck", filepath.Join(dir, "missing.img")}, fsckError, "ustore: stat " + filepath.Join(dir, "missing.img") + ": no such file or directory"},
		{[]string{"fsck", formatted}, fsckError, "ustore: server: the device is in use by another server: " + formatted + " is locked (is another ustore serve running on it?)"},
		{[]string{"fsck", "--backend", "tape", formatted}, exitUsage, `ustore: devopen: unknown backend "tape"…`},
		{[]string{"fsck", "a", "b"}, exitUsage, "ustore: accepts at most 1 arg(s), received 2"},
	} {
		out, err := run(t, tc.args...)
		msg := message(err)
		ok := msg == tc.msg
		if prefix, cut := strings.CutSuffix(tc.msg, "…"); cut {
			ok = strings.HasPrefix(msg, prefix)
		}
		if exitCode(err) != tc.code || !ok || strings.Contains(msg, "\n") {
			t.Errorf("%v: exit %d, %q; want exit %d, %q\n%s", tc.args, exitCode(err), msg, tc.code, tc.msg, out)
		}
	}
}
