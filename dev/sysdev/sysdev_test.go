package sysdev

import (
	"bytes"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"ustore/dev"
	"ustore/dev/devtest"
)

const s = dev.SectorSize

// fileOpener opens a fresh file of size bytes in dir (t.TempDir() when dir
// is "") for devtest.
func fileOpener(dir string, direct bool) func(t *testing.T, size int64) dev.Device {
	return func(t *testing.T, size int64) dev.Device {
		d := dir
		if d == "" {
			d = t.TempDir()
		}
		path := filepath.Join(d, strings.ReplaceAll(t.Name(), "/", "_"))
		dv, err := Open(path, Options{Size: size, Direct: direct, Logger: quietLogger()})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return dv
	}
}

// quietLogger discards log lines.
func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// logBuffer is a logger whose lines a test can read.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(strings.TrimSpace(l.buf.String()), "\n")
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

func TestDevice_Conformance_Direct(t *testing.T) {
	devtest.Run(t, fileOpener("", true))
}

func TestDevice_Conformance_Buffered(t *testing.T) {
	devtest.Run(t, fileOpener("", false))
}

// shmDir returns a temporary directory on tmpfs (/dev/shm), removed after the
// test, or skips the test when there is none.
func shmDir(t *testing.T) string {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &st); err != nil {
		t.Skipf("no /dev/shm (%v): no tmpfs to test on", err)
	}
	if st.Type != unix.TMPFS_MAGIC {
		t.Skipf("/dev/shm is not tmpfs (type %#x): no tmpfs to test on", st.Type)
	}
	dir, err := os.MkdirTemp("/dev/shm", "sysdev-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TestOpen_Tmpfs_DirectOrFallback opens a file on tmpfs with Direct. Before
// Linux 6.6 tmpfs refuses O_DIRECT with EINVAL: the device must fall back to
// buffered I/O and log one line. Since 6.6 tmpfs takes O_DIRECT: the device
// must use it and log nothing. The test asks the kernel which applies, then
// runs the conformance suite on tmpfs either way.
func TestOpen_Tmpfs_DirectOrFallback(t *testing.T) {
	dir := shmDir(t)
	probe := filepath.Join(dir, "probe")
	fd, err := unix.Open(probe, unix.O_RDWR|unix.O_CREAT|unix.O_DIRECT|unix.O_CLOEXEC, 0o600)
	kernelTakesDirect := err == nil
	switch {
	case err == nil:
		unix.Close(fd)
		t.Log("this kernel's tmpfs takes O_DIRECT (Linux >= 6.6): expecting no fallback")
	case err == unix.EINVAL:
		t.Log("this kernel's tmpfs refuses O_DIRECT: expecting the fallback")
	default:
		t.Fatalf("probe open: %v", err)
	}

	var log logBuffer
	d, err := Open(filepath.Join(dir, "dev"), Options{Size: 1 << 20, Direct: true, Logger: log.logger()})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer d.Close()
	if kernelTakesDirect {
		if d.Backend() != "pread/pwrite (O_DIRECT)" || log.buf.Len() != 0 {
			t.Errorf("Backend %q, log %q; want O_DIRECT and no log line", d.Backend(), log.lines())
		}
	} else {
		lines := log.lines()
		if d.Backend() != "pread/pwrite (buffered)" || len(lines) != 1 || !strings.Contains(lines[0], "O_DIRECT") {
			t.Errorf("Backend %q, log %q; want buffered and one line about O_DIRECT", d.Backend(), lines)
		}
	}
	devtest.Run(t, fileOpener(dir, true))
}

// TestDevice_Conformance_BlockDevice runs the suite on loop devices (root
// and losetup needed), with O_DIRECT, so that the BLKGETSIZE64 path runs.
func TestDevice_Conformance_BlockDevice(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping loop devices")
	}
	devtest.Run(t, func(t *testing.T, size int64) dev.Device {
		path := loopDevice(t, size)
		d, err := Open(path, Options{Direct: true, Logger: quietLogger()})
		if err != nil {
			t.Fatalf("Open(%s): %v", path, err)
		}
		return d
	})
}

// loopDevice attaches a zero-filled file of size bytes to a free loop
// device, detached when the test ends, or skips the test with the reason.
func loopDevice(t *testing.T, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("loop devices need root")
	}
	if _, err := exec.LookPath("losetup"); err != nil {
		t.Skip("losetup not found")
	}
	file := filepath.Join(t.TempDir(), "backing")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(file, size); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "--find", "--show", file).CombinedOutput()
	if err != nil {
		t.Skipf("losetup --find --show: %v: %s (no loop devices here?)", err, out)
	}
	path := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "--detach", path).CombinedOutput(); err != nil {
			t.Errorf("losetup --detach %s: %v: %s", path, err, out)
		}
	})
	return path
}
