package devopen

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"ustore/dev"
	"ustore/dev/sysdev"
	"ustore/dev/uringdev"
	"ustore/ring"
)

// refuseIOUring makes the io_uring backend fail as a kernel with
// kernel.io_uring_disabled=2 does (EPERM from io_uring_setup).
func refuseIOUring(t *testing.T) {
	t.Helper()
	saved, savedRing := openURing, newRing
	refused := fmt.Errorf("%w: io_uring is disabled by sysctl kernel.io_uring_disabled: %w", ring.ErrUnavailable, unix.EPERM)
	openURing = func(string, uringdev.Options) (dev.Device, error) { return nil, refused }
	newRing = func(ring.Config) (*ring.Ring, error) { return nil, refused }
	t.Cleanup(func() { openURing, newRing = saved, savedRing })
}

func open(t *testing.T, b Backend) (dev.Device, Choice, *bytes.Buffer) {
	t.Helper()
	var log bytes.Buffer
	d, c, err := Open(filepath.Join(t.TempDir(), "dev.img"), Options{
		Size: 8 << 20, Backend: b, Logger: slog.New(slog.NewTextHandler(&log, nil)),
	})
	if err != nil {
		t.Fatalf("Open(%s): %v", b, err)
	}
	t.Cleanup(func() { d.Close() })
	return d, c, &log
}

func TestOpen_Auto_PicksIOUring(t *testing.T) {
	d, c, _ := open(t, Auto)
	if _, ok := d.(*uringdev.Device); !ok || c.Backend != IOUring {
		t.Fatalf("got %T, choice %v; want uringdev", d, c)
	}
}

func TestOpen_Syscall_PicksSysdev(t *testing.T) {
	d, c, _ := open(t, Syscall)
	if _, ok := d.(*sysdev.Device); !ok || c.Backend != Syscall {
		t.Fatalf("got %T, choice %v; want sysdev", d, c)
	}
}

func TestOpen_Auto_FallsBackWhenRefused(t *testing.T) {
	refuseIOUring(t)
	d, c, log := open(t, Auto)
	if _, ok := d.(*sysdev.Device); !ok || c.Backend != Syscall {
		t.Fatalf("got %T, choice %v; want sysdev", d, c)
	}
	if !strings.Contains(c.Reason, "io_uring_disabled") {
		t.Fatalf("reason %q does not say why", c.Reason)
	}
	if !strings.Contains(log.String(), "falling back") || !strings.Contains(log.String(), "io_uring_disabled") {
		t.Fatalf("log does not explain the fallback: %s", log)
	}
	// The fallback device works.
	buf := dev.AlignedBuffer(dev.SectorSize)
	buf[0] = 42
	if err := d.WriteDurable([]dev.IO{{Off: 0, Buf: buf}}); err != nil {
		t.Fatal(err)
	}
}

func TestOpen_IOUring_FailsWhenRefused(t *testing.T) {
	refuseIOUring(t)
	_, _, err := Open(filepath.Join(t.TempDir(), "dev.img"), Options{Size: 1 << 20, Backend: IOUring})
	if !errors.Is(err, ring.ErrUnavailable) {
		t.Fatalf("--backend=io_uring on a refusing kernel: %v, want ErrUnavailable", err)
	}
}

func TestProbe_SaysWhy(t *testing.T) {
	if c := Probe(); c.Backend != IOUring {
		t.Fatalf("Probe on this machine: %v", c)
	}
	refuseIOUring(t)
	if c := Probe(); c.Backend != Syscall || !strings.Contains(c.Reason, "io_uring_disabled") {
		t.Fatalf("Probe with io_uring refused: %v", c)
	}
}

func TestParseBackend(t *testing.T) {
	for in, want := range map[string]Backend{"": Auto, "auto": Auto, "io_uring": IOUring, "syscall": Syscall} {
		if got, err := ParseBackend(in); err != nil || got != want {
			t.Errorf("ParseBackend(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseBackend("spdk"); err == nil {
		t.Error("ParseBackend(spdk) succeeded")
	}
}

// TestOpen_ReadOnly: both backends open an existing device O_RDONLY: reads
// work, the kernel refuses a write (EBADF) and the file is unchanged; a
// missing file is not created, and a size to extend to is refused.
func TestOpen_ReadOnly(t *testing.T) {
	for _, b := range []Backend{IOUring, Syscall} {
		t.Run(string(b), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "dev.img")
			want := bytes.Repeat([]byte("ustore!\n"), 8<<20/8)
			if err := os.WriteFile(path, want, 0o600); err != nil {
				t.Fatal(err)
			}
			d, _, err := Open(path, Options{Backend: b, ReadOnly: true, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			buf := dev.AlignedBuffer(dev.SectorSize)
			if err := d.Read([]dev.IO{{Buf: buf, Off: dev.SectorSize}}); err != nil {
				t.Fatalf("read: %v", err)
			}
			if !bytes.Equal(buf, want[dev.SectorSize:2*dev.SectorSize]) {
				t.Fatal("read the wrong bytes")
			}
			clear(buf)
			if err := d.Write([]dev.IO{{Buf: buf, Off: 0}}); !errors.Is(err, unix.EBADF) {
				t.Fatalf("write on a read-only device: %v, want EBADF", err)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
				t.Fatal("the file changed")
			}

			missing := filepath.Join(t.TempDir(), "missing.img")
			if _, _, err := Open(missing, Options{Backend: b, ReadOnly: true}); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("read-only open of a missing file: %v, want ENOENT", err)
			}
			if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a read-only open created %s", missing)
			}
			if _, _, err := Open(path, Options{Backend: b, ReadOnly: true, Size: 16 << 20}); !errors.Is(err, sysdev.ErrSize) {
				t.Errorf("read-only open with a size: %v, want sysdev.ErrSize", err)
			}
		})
	}
}
