package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"ustore/client"
	"ustore/dev/devopen"
	"ustore/engine"
	"ustore/journal"
)

// buildUstore builds this command into a temporary directory (with the
// race detector when the test runs under it, which reuses the test's
// compiled packages).
func buildUstore(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "ustore")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	out, err := exec.Command(goTool, append(args, ".")...).CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// serveProc is a running `ustore serve`.
type serveProc struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	exited chan struct{} // closed when the process has exited; then err is set
	err    error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServe starts the binary and waits for its READY=1 on a
// $NOTIFY_SOCKET of its own.
func startServe(t *testing.T, bin string, args ...string) *serveProc {
	t.Helper()
	notify := filepath.Join(t.TempDir(), "notify.sock")
	nl, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notify, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer nl.Close()
	p := &serveProc{cmd: exec.Command(bin, append([]string{"serve"}, args...)...), stderr: &syncBuffer{}, exited: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+notify)
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("serve's log:\n%s", p.stderr.String())
		}
	})
	ready := make(chan string, 1)
	go func() {
		buf := make([]byte, 256)
		nl.SetReadDeadline(time.Now().Add(60 * time.Second))
		n, _, err := nl.ReadFromUnix(buf)
		if err != nil {
			ready <- err.Error()
			return
		}
		ready <- string(buf[:n])
	}()
	select {
	case msg := <-ready:
		if msg != "READY=1" {
			t.Fatalf("notify: %q\n%s", msg, p.stderr.String())
		}
	case <-p.exited:
		t.Fatalf("serve exited before it was ready: %v\n%s", p.err, p.stderr.String())
	}
	return p
}

// waitLog waits for want in serve's log (copied from its stderr by
// another goroutine, so a line written before READY=1 may come after).
func (p *serveProc) waitLog(t *testing.T, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(p.stderr.String(), want); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("serve's log lacks %q:\n%s", want, p.stderr.String())
		}
	}
}

// stop sends SIGTERM and checks that serve exits 0.
func (p *serveProc) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		if p.err != nil {
			t.Fatalf("serve after SIGTERM: %v\n%s", p.err, p.stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not exit after SIGTERM\n%s", p.stderr.String())
	}
}

// TestCommand_Serve_SIGTERMDuringLoad runs the real binary, drives load
// through clients, sends SIGTERM in the middle of it, restarts, and finds
// every write that was answered OK — with a commit interval of five
// minutes, only the shutdown's unmount (which commits) can have made them
// durable.
func TestCommand_Serve_SIGTERMDuringLoad(t *testing.T) {
	bin := buildUstore(t)
	dir := t.TempDir()
	dev := filepath.Join(dir, "data", "ustore.img")
	sock := filepath.Join(dir, "data", "ustore.sock")
	args := []string{"--device", dev, "--size", "256M", "--commit-interval", "5m", "--dirty-size", "64M", "--cache-size", "32M"}
	p := startServe(t, bin, args...)
	if fi, err := os.Stat(sock); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket next to the data: %v", err)
	}
	for _, want := range []string{"mount_duration=", "backend=", "socket=" + sock} {
		p.waitLog(t, want)
	}

	// A second server on the same device is refused, naming it.
	err := runServe(serveConfig{Device: dev, Socket: filepath.Join(dir, "other.sock"), Size: 256 << 20},
		slog.New(slog.DiscardHandler), nil)
	if !errors.Is(err, devopen.ErrDeviceInUse) || !strings.Contains(err.Error(), dev) {
		t.Fatalf("second server: %v", err)
	}

	// Load: each worker puts files and writes by inode, recording what
	// was answered OK, until the server goes away.
	type acked struct {
		path string
		data []byte
	}
	var mu sync.Mutex
	var done []acked
	var wg sync.WaitGroup
	ctx := context.Background()
	started := make(chan struct{}, 64)
	for ci := range 4 {
		c, err := client.Dial(ctx, sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f, err := c.Create(ctx, client.RootIno, fmt.Sprintf("log-%d-%d", ci, w), 0o644)
				if err != nil {
					return
				}
				var log []byte
				for k := 0; ; k++ {
					rec := []byte(fmt.Sprintf("record %d of %d/%d;", k, ci, w))
					if _, err := c.Write(ctx, f.Ino, uint64(len(log)), rec); err != nil {
						break
					}
					log = append(log, rec...)
					path := fmt.Sprintf("/put-%d-%d-%d", ci, w, k)
					data := bytes.Repeat([]byte(path), 1+k%300)
					if _, err := c.Put(ctx, path, data, false); err != nil {
						break
					}
					mu.Lock()
					done = append(done, acked{path, data})
					mu.Unlock()
					if k == 20 {
						started <- struct{}{}
					}
				}
				mu.Lock()
				done = append(done, acked{fmt.Sprintf("/log-%d-%d", ci, w), log})
				mu.Unlock()
			}()
		}
	}
	for range 16 {
		select {
		case <-started:
		case <-time.After(60 * time.Second):
			t.Fatal("the load did not get going")
		}
	}
	p.stop(t)
	wg.Wait()
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket outlived the server: %v", err)
	}
	p.waitLog(t, "unmounted")

	// Restart on the same device: everything answered is there.
	p2 := startServe(t, bin, args...)
	c, err := client.Dial(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range done {
		got, err := c.Get(ctx, a.path)
		if err != nil || !bytes.Equal(got, a.data) {
			t.Fatalf("%s after the restart: %d bytes (want %d), %v", a.path, len(got), len(a.data), err)
		}
	}
	t.Logf("%d acknowledged puts and logs found after SIGTERM and restart", len(done))
	c.Close()
	p2.stop(t)

	if out, err := run(t, "fsck", dev); err != nil {
		t.Fatalf("fsck: %v\n%s", err, out)
	}
}

// TestCommand_Serve_FormatsOnlyBlankFiles: a blank file is formatted and
// served; a file with other data is refused, untouched.
func TestCommand_Serve_FormatsOnlyBlankFiles(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)

	blank := filepath.Join(dir, "blank.img")
	if err := os.WriteFile(blank, make([]byte, 8192), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(blank, 64<<20); err != nil {
		t.Fatal(err)
	}
	cfg := serveConfig{Device: blank, Size: 128 << 20, Socket: defaultSocket(blank), SocketMode: 0o600, ShutdownTimeout: 10 * time.Second}
	if cfg.Socket != filepath.Join(dir, "blank.sock") {
		t.Fatalf("default socket %s", cfg.Socket)
	}
	sigs := make(chan os.Signal, 1)
	served := make(chan error, 1)
	go func() { served <- runServe(cfg, log, sigs) }()
	var c *client.Client
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var err error
		if c, err = client.Dial(context.Background(), cfg.Socket); err == nil {
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
	if _, err := c.Put(context.Background(), "/x", []byte("on a blank file"), false); err != nil {
		t.Fatal(err)
	}
	c.Close()
	sigs <- syscall.SIGTERM
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(blank); err != nil || fi.Size() != 128<<20 {
		t.Fatalf("blank file not extended to --size: %v", err)
	}
	// Served again: not reformatted.
	go func() { served <- runServe(cfg, log, sigs) }()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var err error
		if c, err = client.Dial(context.Background(), cfg.Socket); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no socket: %v", err)
		}
	}
	if got, err := c.Get(context.Background(), "/x"); err != nil || string(got) != "on a blank file" {
		t.Fatalf("after a restart: %q %v", got, err)
	}
	c.Close()
	sigs <- syscall.SIGTERM
	if err := <-served; err != nil {
		t.Fatal(err)
	}

	foreign := filepath.Join(dir, "foreign.img")
	content := bytes.Repeat([]byte("not a ustore filesystem "), 100000)
	if err := os.WriteFile(foreign, content, 0o600); err != nil {
		t.Fatal(err)
	}
	err := runServe(serveConfig{Device: foreign, Size: 128 << 20, Socket: defaultSocket(foreign)}, log, nil)
	want := foreign + " is not a ustore filesystem (no superblock copy carries ustore's magic number) and is not blank: " +
		"serve does not format it; run 'ustore mkfs " + foreign + "' to format it, destroying its contents"
	if err == nil || err.Error() != want || !errors.Is(err, engine.ErrNotFormatted) {
		t.Fatalf("a foreign file: %q, want %q", err, want)
	}
	if b, _ := os.ReadFile(foreign); !bytes.Equal(b, content) {
		t.Fatal("the foreign file was changed")
	}
	if _, err := os.Stat(defaultSocket(foreign)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a socket appeared for a device that did not mount")
	}
}

// TestIsBlank_Cases: holes, zero bytes and emptiness are blank; one byte is not.
func TestIsBlank_Cases(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		write func(f *os.File)
		want  bool
	}{
		{"empty", func(*os.File) {}, true},
		{"sparse", func(f *os.File) { f.Truncate(1 << 30) }, true},
		{"zero bytes", func(f *os.File) { f.Write(make([]byte, 3<<20)) }, true},
		{"a byte at the end", func(f *os.File) { f.WriteAt([]byte{1}, 5<<20) }, false},
		{"a byte after zeros", func(f *os.File) { f.Write(make([]byte, 100)); f.Write([]byte{7}); f.Truncate(1 << 20) }, false},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		tc.write(f)
		f.Close()
		if got, err := isBlank(path); err != nil || got != tc.want {
			t.Errorf("%s: %v %v, want %v", tc.name, got, err, tc.want)
		}
	}
}

// TestCommand_Serve_BadFlags are usage errors.
func TestCommand_Serve_BadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--size", "lots"},
		{"serve", "--socket-mode", "rwx"},
		{"serve", "--socket-mode", "01777"},
		{"serve", "--backend", "floppy"},
		{"serve", "--allow-uid", "no-such-user-here"},
		{"serve", "--log-level", "loud"},
		{"serve", "--ebpf", "maybe"},
		{"serve", "--ebpf-features", "markers,kprobes"},
		{"serve", "--skip-log-replay"},
		{"serve", "--idle-timeout", "-1s"},
		{"serve", "--handles-per-conn", "0"},
		{"serve", "extra"},
	} {
		_, err := run(t, args...)
		if err == nil || !isUsage(err) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	out, err := run(t, "serve", "--help")
	if err != nil || !strings.Contains(out, "SIGTERM") || !strings.Contains(out, "ustore-data/ustore.sock") {
		t.Fatalf("help: %v\n%s", err, out)
	}
	if !strings.Contains(out, `--cache-size string              memory for tree nodes, clean file data and in-memory inodes together, one budget (auto: a quarter of RAM, 64M to 4G) (default "auto")`) {
		t.Fatalf("help lacks --cache-size's one budget and its default:\n%s", out)
	}
}

// TestCommand_Serve_AblationFlagsHidden: the --ablate-* flags are not in
// `serve --help`, yet each still parses into its journal.Ablations field
// (bench/ scripts set them).
func TestCommand_Serve_AblationFlagsHidden(t *testing.T) {
	out, err := run(t, "serve", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "ablate") || !strings.Contains(out, "--read-only") {
		t.Fatalf("serve --help shows an ablation flag, or lacks the others:\n%s", out)
	}
	var a journal.Ablations
	c := &cobra.Command{}
	addAblationFlags(c, &a)
	var args []string
	for _, af := range ablationFlags {
		if f := c.Flags().Lookup(af.name); f == nil || !f.Hidden {
			t.Fatalf("--%s: %+v, want a hidden flag", af.name, f)
		}
		args = append(args, "--"+af.name)
	}
	if err := c.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	if a != (journal.Ablations{CommittedLocked: true, LogInsertSearch: true, TeardownPerRange: true, LogNodesEverySync: true}) {
		t.Fatalf("%v set %+v, want every ablation", args, a)
	}
}
