package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"ustore/dev/devopen"
	"ustore/store"
)

// withUmask runs the rest of the test under umask m (restored after).
func withUmask(t *testing.T, m int) {
	t.Helper()
	old := syscall.Umask(m)
	t.Cleanup(func() { syscall.Umask(old) })
}

// putFile stores one file in the filesystem at path, as a client would.
func putFile(t *testing.T, path, name string, data []byte) {
	t.Helper()
	d, _, err := devopen.Open(path, devopen.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	st, err := store.Open(d, store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.Create(store.RootIno, name, 0o644)
	if err == nil {
		_, err = st.Write(a.Ino, 0, data)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestCommand_Mkfs_RefusesAFilesystem is the attack: mkfs over an image
// that holds data printed "formatted" and exited 0. Now it refuses, names
// what it found, and changes no byte; --force formats and says what it
// destroyed.
func TestCommand_Mkfs_RefusesAFilesystem(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.img")
	if out, err := run(t, "mkfs", "--size", "64M", "--nodesize", "4k", path); err != nil {
		t.Fatalf("mkfs: %v\n%s", err, out)
	}
	putFile(t, path, "precious", []byte("acknowledged data"))
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "mkfs", "--size", "64M", path)
	if err == nil || !strings.Contains(err.Error(), "a ustore filesystem") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("mkfs over a filesystem: %v\n%s", err, out)
	}
	if strings.Contains(out, "formatted") {
		t.Fatalf("a refused mkfs says it formatted:\n%s", out)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("a refused mkfs changed the image")
	}
	out, err = run(t, "mkfs", "--force", "--size", "64M", path)
	if err != nil || !strings.Contains(out, "destroyed a ustore filesystem") || !strings.Contains(out, "formatted") {
		t.Fatalf("mkfs --force: %v\n%s", err, out)
	}
	if out, err := run(t, "fsck", path); err != nil {
		t.Fatalf("fsck after mkfs --force: %v\n%s", err, out)
	}
}

// TestCommand_Mkfs_RefusesADamagedUstore: the magic alone is enough — a
// superblock slot whose checksum is broken is a damaged filesystem, for
// fsck, and so is one with only its second slot left.
func TestCommand_Mkfs_RefusesADamagedUstore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.img")
	if out, err := run(t, "mkfs", "--size", "64M", path); err != nil {
		t.Fatalf("mkfs: %v\n%s", err, out)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Break slot 0's checksum; zero slot 1 entirely.
	if _, err := f.WriteAt([]byte{0xff, 0xff, 0xff, 0xff}, 64<<10); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, 4096), 128<<10); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := run(t, "mkfs", path); err == nil || !strings.Contains(err.Error(), "a ustore filesystem (magic at byte 65568)") {
		t.Fatalf("mkfs over a damaged slot 0: %v", err)
	}
}

// TestCommand_Mkfs_RefusesEachSignature: mkfs refuses every signature of
// the table, naming it, and leaves the file as it was; --force formats it
// and wipes the old signature, so that only ustore is found after.
func TestCommand_Mkfs_RefusesEachSignature(t *testing.T) {
	for _, s := range signatures {
		t.Run(fmt.Sprintf("%s@%d", s.name, s.off), func(t *testing.T) {
			path := withMagic(t, s, 8<<20)
			before, _ := os.ReadFile(path)
			_, err := run(t, "mkfs", "--size", "8M", "--nodesize", "4k", path)
			if err == nil || !strings.Contains(err.Error(), s.String()) {
				t.Fatalf("mkfs over %s: %v", s.name, err)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Fatal("a refused mkfs changed the file")
			}
			if out, err := run(t, "mkfs", "--force", "--size", "8M", "--nodesize", "4k", path); err != nil {
				t.Fatalf("mkfs --force: %v\n%s", err, out)
			}
			found, err := probePath(path)
			if err != nil || len(found) != 1 || found[0].name != "a ustore filesystem" {
				t.Fatalf("after mkfs --force: %v %v, want ustore alone", found, err)
			}
		})
	}
}

func (s signature) String() string { return foundSignature{s.name, s.off}.String() }

// TestCommand_Mkfs_FailureRemovesCreatedFile: a mkfs that fails after it
// created its file removes it — and never a file that was there before.
func TestCommand_Mkfs_FailureRemovesCreatedFile(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--size", "1k"},       // less than a sector: the device refuses it
		{"--nodesize", "3000"}, // not a power of two: Mkfs refuses it
		{"--size", "64k"},      // smaller than the superblock area
		{"--backend", "syscall", "--nodesize", "128k"},
	} {
		path := filepath.Join(dir, "new.img")
		if _, err := run(t, append(append([]string{"mkfs"}, args...), path)...); err == nil {
			t.Fatalf("mkfs %v succeeded", args)
		}
		if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("mkfs %v failed and left the file it created: %v", args, err)
		}
	}
	// An existing file is kept, failure or not.
	path := filepath.Join(dir, "existing.img")
	if err := os.WriteFile(path, []byte("not formatted, no signature"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "mkfs", "--nodesize", "3000", path); err == nil {
		t.Fatal("mkfs --nodesize 3000 succeeded")
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("a failed mkfs removed a file it did not create: %v", err)
	}
}

// TestCommand_Mkfs_Creates0600: the file mkfs creates is 0600 under any
// umask — not widened by umask 0, not narrowed (unwritable) by 0277 —
// and a directory it creates is dataDirMode less the umask.
func TestCommand_Mkfs_Creates0600(t *testing.T) {
	for _, um := range []int{0, 0o022, 0o277} {
		path := filepath.Join(t.TempDir(), "data", "d.img")
		if um&0o200 != 0 {
			// A umask without the owner's write bit would make the
			// directory unwritable to a user without CAP_DAC_OVERRIDE.
			if err := os.Mkdir(filepath.Dir(path), dataDirMode); err != nil {
				t.Fatal(err)
			}
		}
		withUmask(t, um)
		if out, err := run(t, "mkfs", "--size", "64M", path); err != nil {
			t.Fatalf("umask %04o: mkfs: %v\n%s", um, err, out)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("umask %04o: data file mode %v, %v; want 0600", um, fi.Mode(), err)
		}
		if fi, err := os.Stat(filepath.Dir(path)); um&0o200 == 0 && (err != nil || fi.Mode().Perm() != dataDirMode&^os.FileMode(um)) {
			t.Fatalf("umask %04o: data directory mode %v, %v", um, fi.Mode(), err)
		}
	}
}

// TestCommand_Mkfs_WarnsOfAReadableFile: mkfs of an existing file others
// can read says that serve will refuse it, and how to fix it.
func TestCommand_Mkfs_WarnsOfAReadableFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.img")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "mkfs", "--size", "64M", path)
	if err != nil || !strings.Contains(out, "chmod 600 "+path) {
		t.Fatalf("mkfs of a 0644 file: %v\n%s", err, out)
	}
}

// TestCommand_Mkfs_BadFlagValue: a flag value the format cannot take is a
// usage error (exit code 2) in one line, told before anything is created,
// through the built binary's real exit code.
func TestCommand_Mkfs_BadFlagValue(t *testing.T) {
	bin := buildUstore(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--nodesize", "3k"}, "ustore: --nodesize 3k: want a power of two from 4k to 64k\n"},
		{[]string{"--nodesize", "128k"}, "ustore: --nodesize 128k: want a power of two from 4k to 64k\n"},
		{[]string{"--nodesize", "2k"}, "ustore: --nodesize 2k: want a power of two from 4k to 64k\n"},
		{[]string{"--size", "1k"}, "ustore: --size 1k: want a multiple of 4k\n"},
		{[]string{"--size", "64k"}, "ustore: --size 64k: too small, want at least 2048k with 16k nodes\n"},
		{[]string{"--size", "1M", "--nodesize", "4k"}, "ustore: --size 1M: too small, want at least 1280k with 4k nodes\n"},
		{[]string{"--size", "lots"}, "ustore: --size: \"lots\" is not a byte count (examples: 4096, 4k, 16M, 1G)\n"},
	} {
		img := filepath.Join(dir, "new.img")
		cmd := exec.Command(bin, append(append([]string{"mkfs"}, tc.args...), img)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitUsage || stderr.String() != tc.msg {
			t.Errorf("mkfs %v: %v, %q; want exit 2, %q", tc.args, err, stderr.String(), tc.msg)
		}
		if _, err := os.Stat(img); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("mkfs %v left %s: %v", tc.args, img, err)
		}
	}
	// fsck's own codes reach the process too: 8, could not check.
	random := filepath.Join(dir, "random.img")
	if err := os.WriteFile(random, bytes.Repeat([]byte{0xa5}, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "fsck", random)
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != fsckError ||
		stderr.String() != "ustore: "+random+": not a ustore filesystem (no superblock copy carries ustore's magic number)\n" {
		t.Errorf("fsck of a random file: %v, %q", err, stderr.String())
	}
}
