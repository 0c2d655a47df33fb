package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"ustore/client"
	"ustore/engine"
	"ustore/store"
)

// rightmostInternalNode returns the device offset of the fs tree's last
// level-1 node: on the path a read-write mount reads for the highest
// inode number.
func rightmostInternalNode(t *testing.T, s *store.Store) (bytenr uint64, first engine.Key) {
	t.Helper()
	var dump strings.Builder
	if err := s.Engine().Tree(engine.FSTreeID).DumpWith(&dump, engine.DumpOptions{Bytenrs: true, MinLevel: 1}); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(dump.String(), "\n") {
		var b uint64
		var gen, items int
		var k engine.Key
		if _, err := fmt.Sscanf(strings.TrimSpace(l), "node %d level 1 gen %d items %d keys (%d %d %d)",
			&b, &gen, &items, &k.ObjectID, &k.Type, &k.Offset); err == nil {
			bytenr, first = b, k
		}
	}
	if bytenr == 0 {
		t.Fatalf("no level-1 node:\n%s", dump.String())
	}
	return bytenr, first
}

// TestCommand_Serve_ReadOnly: one damaged internal node of the fs tree
// makes serve fail to mount; serve --read-only mounts, serves the intact
// files, answers EIO for those under the damaged node and EROFS for every
// change, shuts down cleanly, and leaves the image byte for byte as it
// was.
func TestCommand_Serve_ReadOnly(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "dev.img")
	if out, err := run(t, "mkfs", "--size", "64M", "--nodesize", "4k", img); err != nil {
		t.Fatalf("mkfs: %v\n%s", err, out)
	}
	const files = 3000
	inos := make([]store.Ino, files)
	var node uint64
	var first engine.Key
	withImageStore(t, img, func(s *store.Store) {
		for i := range files {
			a, err := s.Create(store.RootIno, fmt.Sprintf("f%04d", i), 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Write(a.Ino, 0, fmt.Appendf(nil, "content of %d", i)); err != nil {
				t.Fatal(err)
			}
			inos[i] = a.Ino
		}
		if err := s.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		node, first = rightmostInternalNode(t, s)
	})
	flipFileByte(t, img, int64(node)+300)
	sock := filepath.Join(dir, "ro.sock")
	cfg := serveConfig{Device: img, Socket: sock, SocketMode: 0o600, ShutdownTimeout: 10 * time.Second, Backend: "syscall"}
	log := slog.New(slog.DiscardHandler)
	if err := runServe(cfg, log, nil); err == nil || !errors.Is(err, engine.ErrCorruption) {
		t.Fatalf("read-write serve of the damaged image: %v", err)
	}
	before := fileHash(t, img)

	cfg.ReadOnly = true
	sigs := make(chan os.Signal, 1)
	served := make(chan error, 1)
	go func() { served <- runServe(cfg, log, sigs) }()
	ctx := context.Background()
	var c *client.Client
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var err error
		if c, err = client.Dial(ctx, sock); err == nil {
			break
		}
		select {
		case err := <-served:
			t.Fatalf("serve --read-only: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve --read-only not listening: %v", err)
		}
	}
	// Every descriptor on the image is O_RDONLY: the kernel itself would
	// refuse a write.
	if n := writableFDs(t, img); n != 0 {
		t.Fatalf("%d descriptors open the image for writing", n)
	}
	intact, eio := 0, 0
	for i, ino := range inos {
		got, err := c.Get(ctx, fmt.Sprintf("/f%04d", i))
		switch {
		case err == nil && string(got) == fmt.Sprintf("content of %d", i):
			intact++
		case errors.Is(err, syscall.EIO) && ino+1 >= first.Ino():
			eio++
		default:
			t.Fatalf("file %d (ino %d; damaged node from %v): %q %v", i, ino, first, got, err)
		}
	}
	if intact == 0 || eio == 0 {
		t.Fatalf("%d files intact, %d EIO", intact, eio)
	}
	if _, err := c.Create(ctx, client.RootIno, "new", 0o644); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("create: %v, want EROFS", err)
	}
	if _, err := c.Put(ctx, "/put", []byte("x"), true); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("put: %v, want EROFS", err)
	}
	if _, err := c.Write(ctx, uint64(inos[0]), 0, []byte("x")); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("write: %v, want EROFS", err)
	}
	if err := c.Unlink(ctx, client.RootIno, "f0000"); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("unlink: %v, want EROFS", err)
	}
	if err := c.Sync(ctx); err != nil {
		t.Fatalf("sync: %v", err)
	}
	c.Close()
	sigs <- syscall.SIGTERM
	if err := <-served; err != nil {
		t.Fatalf("serve --read-only after SIGTERM: %v", err)
	}
	if fileHash(t, img) != before {
		t.Fatal("serve --read-only changed the image")
	}
}

// TestCommand_Serve_ReadOnlyNeverFormats: serve --read-only neither
// creates a missing data file nor formats a blank one.
func TestCommand_Serve_ReadOnlyNeverFormats(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	// A SIGTERM already waiting: a serve that did start stops at once
	// (and returns nil) instead of serving until the test times out.
	stopped := func() chan os.Signal {
		sigs := make(chan os.Signal, 1)
		sigs <- syscall.SIGTERM
		return sigs
	}
	missing := filepath.Join(dir, "missing.img")
	cfg := serveConfig{Device: missing, Socket: filepath.Join(dir, "s.sock"), SocketMode: 0o600, Size: 64 << 20,
		ShutdownTimeout: time.Second, Backend: "syscall", ReadOnly: true}
	if err := runServe(cfg, log, stopped()); err == nil {
		t.Fatal("serve --read-only of a missing file succeeded")
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("serve --read-only created the data file: %v", err)
	}
	blank := filepath.Join(dir, "blank.img")
	if err := os.WriteFile(blank, make([]byte, 64<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	before := fileHash(t, blank)
	cfg.Device = blank
	if err := runServe(cfg, log, stopped()); !errors.Is(err, engine.ErrNotFormatted) {
		t.Fatalf("serve --read-only of a blank file: %v", err)
	}
	if fileHash(t, blank) != before {
		t.Fatal("serve --read-only formatted a blank file")
	}
}

// writableFDs counts this process's descriptors on path whose access mode
// allows writing (/proc/self/fdinfo's flags).
func writableFDs(t *testing.T, path string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n, seen := 0, 0
	for _, e := range ents {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil || target != path {
			continue
		}
		seen++
		info, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		var flags int
		for _, line := range strings.Split(string(info), "\n") {
			if v, ok := strings.CutPrefix(line, "flags:"); ok {
				fmt.Sscanf(strings.TrimSpace(v), "%o", &flags)
			}
		}
		if flags&unix.O_ACCMODE != unix.O_RDONLY {
			n++
		}
	}
	if seen == 0 {
		t.Fatalf("no descriptor open on %s", path)
	}
	return n
}
