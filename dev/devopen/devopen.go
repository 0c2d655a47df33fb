// Package devopen opens the backing device with the best backend this
// machine has: io_uring (dev/uringdev) where the kernel allows it, otherwise
// pread/pwrite (dev/sysdev), saying which and why. It is a package of its own
// so that importing dev — as the engine does — never links the io_uring
// layer: dev cannot import its own implementations.
//
// It also holds the device's lock (lock.go): the flock that lets one
// process at a time — serve, mkfs or fsck — use a device, taken once by
// each before it opens the device and held until after it is closed.
package devopen

import (
	"errors"
	"fmt"
	"log/slog"

	"ustore/dev"
	"ustore/dev/sysdev"
	"ustore/dev/uringdev"
	"ustore/ring"
)

// Backend selects the implementation.
type Backend string

const (
	Auto    Backend = "auto"     // io_uring, falling back to syscalls
	IOUring Backend = "io_uring" // io_uring or fail
	Syscall Backend = "syscall"  // pread/pwrite/fdatasync
)

// ParseBackend accepts the names of the --backend flag.
func ParseBackend(s string) (Backend, error) {
	switch b := Backend(s); b {
	case Auto, IOUring, Syscall:
		return b, nil
	case "":
		return Auto, nil
	}
	return "", fmt.Errorf("devopen: unknown backend %q (want auto, io_uring or syscall)", s)
}

// Options configure Open.
type Options struct {
	Size     int64        // extend a smaller regular file to this size (allocated: sysdev.Options.Size)
	Backend  Backend      // default Auto
	Buffered bool         // skip O_DIRECT
	ReadOnly bool         // open O_RDONLY: never created, extended or written; Size must be 0
	Logger   *slog.Logger // default slog.Default()
}

// Choice says which backend was picked and why.
type Choice struct {
	Backend Backend
	Reason  string
}

func (c Choice) String() string { return fmt.Sprintf("%s (%s)", c.Backend, c.Reason) }

// openURing is replaced by tests that simulate a kernel refusing io_uring.
var openURing = func(path string, opts uringdev.Options) (dev.Device, error) {
	return uringdev.Open(path, opts)
}

// Open opens path with the chosen backend. With Auto, an io_uring that the
// kernel refuses (ring.ErrUnavailable) falls back to sysdev, logged with the
// reason and how to enable io_uring.
func Open(path string, opts Options) (dev.Device, Choice, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if opts.Backend == "" {
		opts.Backend = Auto
	}
	if opts.Backend != Syscall {
		d, err := openURing(path, uringdev.Options{Size: opts.Size, Buffered: opts.Buffered, ReadOnly: opts.ReadOnly, Logger: log})
		if err == nil {
			return d, Choice{IOUring, "io_uring available"}, nil
		}
		if opts.Backend == IOUring || !errors.Is(err, ring.ErrUnavailable) {
			return nil, Choice{}, err
		}
		log.Warn("io_uring unavailable; falling back to the pread/pwrite backend", "reason", err)
		d2, err2 := openSys(path, opts, log)
		return d2, Choice{Syscall, err.Error()}, err2
	}
	d, err := openSys(path, opts, log)
	return d, Choice{Syscall, "chosen with --backend=syscall"}, err
}

func openSys(path string, opts Options, log *slog.Logger) (dev.Device, error) {
	d, err := sysdev.Open(path, sysdev.Options{Size: opts.Size, Direct: !opts.Buffered, ReadOnly: opts.ReadOnly, Logger: log})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// newRing is replaced by tests, like openURing.
var newRing = ring.New

// Probe reports which backend Open(Auto) would pick on this machine and why,
// by setting up (and closing) a small ring.
func Probe() Choice {
	r, err := newRing(ring.Config{Entries: 8})
	if err != nil {
		if errors.Is(err, ring.ErrUnavailable) {
			return Choice{Syscall, err.Error()}
		}
		return Choice{Syscall, "io_uring setup failed: " + err.Error()}
	}
	mode := r.Mode()
	_ = r.Close()
	return Choice{IOUring, fmt.Sprintf("io_uring available; ring mode %s", mode)}
}
