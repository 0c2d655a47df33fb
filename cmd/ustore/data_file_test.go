package main

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"ustore/client"
	"ustore/server"
)

// serveInProcess runs runServe(cfg) and returns once a client can connect,
// with the function that stops it (SIGTERM) and checks its clean exit. One
// at a time: tracing is set up once per process.
func serveInProcess(t *testing.T, cfg serveConfig, log *slog.Logger) (stop func()) {
	t.Helper()
	if cfg.SocketMode == 0 {
		cfg.SocketMode = 0o600
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 10 * time.Second
	}
	sigs := make(chan os.Signal, 1)
	served := make(chan error, 1)
	go func() { served <- runServe(cfg, log, sigs) }()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c, err := client.Dial(context.Background(), cfg.Socket)
		if err == nil {
			c.Close()
			break
		}
		select {
		case err := <-served:
			t.Fatalf("serve: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no socket: %v", err)
		}
	}
	return func() {
		t.Helper()
		sigs <- syscall.SIGTERM
		if err := <-served; err != nil {
			t.Fatalf("serve after SIGTERM: %v", err)
		}
	}
}

// TestCommand_Serve_CreatesDataFile0600 is the attack's cause: serve
// created its image 0644, and a user the socket refuses read every stored
// byte from it. Under any umask it is now 0600, and so is a temporary file
// an older serve left behind 0644.
func TestCommand_Serve_CreatesDataFile0600(t *testing.T) {
	for _, um := range []int{0, 0o022, 0o277} {
		dir := filepath.Join(t.TempDir(), "data")
		device := filepath.Join(dir, "ustore.img")
		if um&0o200 != 0 {
			// A umask without the owner's write bit would make the
			// directory unwritable to a user without CAP_DAC_OVERRIDE.
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		withUmask(t, um)
		if um == 0o022 {
			// A crashed first start of an older serve left its
			// temporary file, world-readable.
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(device+".mkfs", nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		serveInProcess(t, serveConfig{Device: device, Size: 64 << 20, Socket: defaultSocket(device)}, slog.New(slog.DiscardHandler))()
		if fi, err := os.Stat(device); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("umask %04o: data file %v, %v; want 0600", um, fi.Mode(), err)
		}
		if um == 0 {
			if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != dataDirMode&^os.FileMode(um) {
				t.Fatalf("umask %04o: data directory %v, %v", um, fi.Mode(), err)
			}
		}
	}
}

// TestCommand_Serve_RefusesReadableDataFile: an existing data file that
// group or others can read or write is refused, with the one line that
// says how to fix it, before anything is locked, written or listened on;
// --allow-readable-device serves it with a warning.
func TestCommand_Serve_RefusesReadableDataFile(t *testing.T) {
	dir := t.TempDir()
	device := filepath.Join(dir, "d.img")
	if out, err := run(t, "mkfs", "--size", "64M", device); err != nil {
		t.Fatalf("mkfs: %v\n%s", err, out)
	}
	cfg := serveConfig{Device: device, Size: 64 << 20, Socket: defaultSocket(device)}
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o620, 0o602, 0o666} {
		if err := os.Chmod(device, mode); err != nil {
			t.Fatal(err)
		}
		err := serveOnce(cfg)
		if !errors.Is(err, errReadableDevice) || !strings.Contains(err.Error(), "chmod 600 "+device) ||
			!strings.Contains(err.Error(), "--allow-readable-device") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("mode %04o: %v", mode, err)
		}
		if _, err := os.Lstat(cfg.Socket); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("mode %04o: a socket appeared for a refused data file", mode)
		}
	}
	// Owner-only bits and execute bits are not access for others.
	for _, mode := range []os.FileMode{0o600, 0o400, 0o700, 0o611} {
		os.Chmod(device, mode)
		if bits := othersAccess(statOf(t, device)); bits != 0 {
			t.Errorf("mode %04o: others' access %04o", mode, bits)
		}
	}
	os.Chmod(device, 0o644)
	var logBuf syncBuffer
	cfg.AllowReadableDevice = true
	serveInProcess(t, cfg, slog.New(slog.NewTextHandler(&logBuf, nil)))()
	if !strings.Contains(logBuf.String(), "--allow-readable-device") || !strings.Contains(logBuf.String(), "mode=0644") {
		t.Fatalf("served a readable data file without a warning:\n%s", logBuf.String())
	}
}

// serveOnce runs runServe(cfg) with a SIGTERM already waiting, so that a
// serve that should have refused to start stops at once (returning nil)
// instead of serving until the test times out.
func serveOnce(cfg serveConfig) error {
	sigs := make(chan os.Signal, 1)
	sigs <- syscall.SIGTERM
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 10 * time.Second
	}
	return runServe(cfg, slog.New(slog.DiscardHandler), sigs)
}

func statOf(t *testing.T, path string) fs.FileInfo {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

// fakeInfo is a FileInfo of a given mode, for device nodes a test cannot
// create.
type fakeInfo struct {
	fs.FileInfo
	mode fs.FileMode
}

func (f fakeInfo) Mode() fs.FileMode { return f.mode }

// TestOthersAccess_BlockDevice: a block device's group (disk, by udev's
// convention) is trusted, the world is not; a regular file trusts no one
// but its owner.
func TestOthersAccess_BlockDevice(t *testing.T) {
	for _, tc := range []struct {
		mode fs.FileMode
		want fs.FileMode
	}{
		{fs.ModeDevice | 0o660, 0},
		{fs.ModeDevice | 0o640, 0},
		{fs.ModeDevice | 0o664, 0o004},
		{fs.ModeDevice | 0o666, 0o006},
		{0o660, 0o060},
		{0o644, 0o044},
	} {
		if got := othersAccess(fakeInfo{mode: tc.mode}); got != tc.want {
			t.Errorf("mode %v: others' access %04o, want %04o", tc.mode, got, tc.want)
		}
	}
}

// TestCommand_Serve_BadSocketLeavesNoImage: serve checks its socket path
// before it creates and formats a data file, so that a bad --socket leaves
// no fresh image behind (and formats no blank file).
func TestCommand_Serve_BadSocketLeavesNoImage(t *testing.T) {
	dir := t.TempDir()
	notSocket := filepath.Join(dir, "plain")
	if err := os.WriteFile(notSocket, []byte("someone's file"), 0o600); err != nil {
		t.Fatal(err)
	}
	live := filepath.Join(dir, "live.sock")
	l, err := net.Listen("unix", live)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, tc := range []struct {
		name, socket string
		want         error
	}{
		{"missing directory", filepath.Join(dir, "no-such-dir", "s.sock"), fs.ErrNotExist},
		{"not a socket", notSocket, server.ErrNotSocket},
		{"a live server", live, server.ErrSocketInUse},
		{"too long", filepath.Join(dir, strings.Repeat("s", 120)), nil},
		{"directory is a file", filepath.Join(notSocket, "s.sock"), nil},
	} {
		device := filepath.Join(dir, "new", "ustore.img")
		err := serveOnce(serveConfig{Device: device, Size: 64 << 20, Socket: tc.socket})
		if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), "--socket") {
			t.Fatalf("%s: %v, want %v", tc.name, err, tc.want)
		}
		for _, p := range []string{device, device + ".mkfs"} {
			if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("%s: serve refused its socket and left %s behind", tc.name, p)
			}
		}
		// A blank file is not formatted either.
		blank := filepath.Join(dir, "blank.img")
		if err := os.WriteFile(blank, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := serveOnce(serveConfig{Device: blank, Size: 64 << 20, Socket: tc.socket}); err == nil {
			t.Fatalf("%s: served a blank file", tc.name)
		}
		if fi, err := os.Stat(blank); err != nil || fi.Size() != 0 {
			t.Fatalf("%s: serve refused its socket and changed the blank file", tc.name)
		}
	}
	// A socket in the data file's directory, which serve would create: its
	// length is still checked first.
	device := filepath.Join(dir, "new", "ustore.img")
	if err := serveOnce(serveConfig{Device: device, Size: 64 << 20, Socket: filepath.Join(dir, "new", strings.Repeat("s", 120))}); err == nil ||
		!strings.Contains(err.Error(), "--socket") {
		t.Fatalf("a long socket in the data file's directory: %v", err)
	}
	if _, err := os.Lstat(device); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("serve refused a long socket path in its own directory and left the data file behind")
	}
	if b, _ := os.ReadFile(notSocket); string(b) != "someone's file" {
		t.Fatal("the file at the socket path was changed")
	}
}
