package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"ustore/bench/ringbench"
	"ustore/dev/devopen"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestCommand_Version_SaysBackend(t *testing.T) {
	out, err := run(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ustore ", "backend: io_uring", "reason:"} {
		if !strings.Contains(out, want) {
			t.Errorf("version output lacks %q:\n%s", want, out)
		}
	}
}

func TestCommand_BenchRing_JSON(t *testing.T) {
	file := filepath.Join(t.TempDir(), "bench.img")
	for _, engine := range ringbench.Engines {
		out, err := run(t, "bench", "ring", "--file", file, "--size", "8M", "--qd", "1,4",
			"--rw", "randread,write", "--duration", "100ms", "--engine", engine, "--json", "--progress", "never")
		if err != nil {
			t.Fatalf("%s: %v\n%s", engine, err, out)
		}
		var results []ringbench.Result
		if err := json.Unmarshal([]byte(out), &results); err != nil {
			t.Fatalf("%s: %v\n%s", engine, err, out)
		}
		if len(results) != 4 {
			t.Fatalf("%s: %d results, want 4", engine, len(results))
		}
		for _, r := range results {
			if r.Ops == 0 || r.IOPS <= 0 || r.P50US <= 0 || r.P99US < r.P50US {
				t.Errorf("%s: implausible result %+v", engine, r)
			}
		}
	}
}

func TestCommand_BenchRing_Table(t *testing.T) {
	file := filepath.Join(t.TempDir(), "bench.img")
	out, err := run(t, "bench", "ring", "--file", file, "--size", "4M", "--qd", "2", "--rw", "randwrite",
		"--duration", "50ms", "--progress", "never")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "IOPS") || !strings.Contains(out, "randwrite") {
		t.Fatalf("table:\n%s", out)
	}
}

func TestCommand_BadInput_IsUsageError(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "ring", "--qd", "x"},
		{"bench", "ring", "--size", "lots"},
		{"version", "extra"},
		{"bench", "ring", "--nope"},
	} {
		_, err := run(t, args...)
		if err == nil || !isUsage(err) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	// A bad value the flags accept but the benchmark refuses is an error
	// too, with a readable message.
	_, err := run(t, "bench", "ring", "--file", filepath.Join(t.TempDir(), "f"), "--size", "1M", "--bs", "1000", "--duration", "10ms")
	if err == nil || !strings.Contains(err.Error(), "4096") {
		t.Errorf("--bs 1000 with O_DIRECT: %v", err)
	}
}

func TestCommand_MkfsFsck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dev.img")
	out, err := run(t, "mkfs", "--size", "64M", "--nodesize", "4k", path)
	if err != nil || !strings.Contains(out, "formatted") {
		t.Fatalf("mkfs: %v\n%s", err, out)
	}
	out, err = run(t, "fsck", path)
	if err != nil || !strings.Contains(out, "clean") {
		t.Fatalf("fsck of a fresh filesystem: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"mkfs", "--force", "--nodesize", "3000", path},
		{"mkfs", "--size", "1k", filepath.Join(t.TempDir(), "tiny.img")},
		{"fsck", filepath.Join(t.TempDir(), "missing.img")},
	} {
		if _, err := run(t, args...); err == nil {
			t.Errorf("%v succeeded", args)
		}
	}
	if _, err := run(t, "mkfs", "a", "b"); !isUsage(err) {
		t.Errorf("two paths: %v, want a usage error", err)
	}
}

// A mistyped command is a usage error (exit 2), like a bad flag.
func TestRoot_UnknownCommandIsUsage(t *testing.T) {
	root := newRootCommand()
	root.SetArgs([]string{"rmdir", "/x"})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	err := root.Execute()
	if err == nil || !isUsage(err) {
		t.Fatalf("got %v, want a usage error", err)
	}
}

// mkfs and fsck refuse a device a server holds: mkfs would destroy its
// data, fsck would check a device changing under it.
func TestCommand_MkfsFsck_RefuseADeviceInUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.img")
	if out, err := run(t, "mkfs", "--size", "64M", "--nodesize", "4k", path); err != nil {
		t.Fatalf("mkfs: %v\n%s", err, out)
	}
	lock, err := devopen.LockDevice(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"mkfs", "--size", "64M", path}, {"fsck", path}} {
		if _, err := run(t, args...); !errors.Is(err, devopen.ErrDeviceInUse) {
			t.Errorf("%v with the device locked: %v, want ErrDeviceInUse", args, err)
		}
	}
	lock.Close()
	if out, err := run(t, "fsck", path); err != nil {
		t.Fatalf("fsck after the lock is gone: %v\n%s", err, out)
	}
}
