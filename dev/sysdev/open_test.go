package sysdev

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"ustore/dev"
)

// directFDs records which fds a fake open opened with O_DIRECT.
type directFDs struct {
	mu sync.Mutex
	m  map[int]bool
}

func (f *directFDs) set(fd int, direct bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = make(map[int]bool)
	}
	f.m[fd] = direct
}

func (f *directFDs) get(fd int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m[fd]
}

// checkFallback checks a device opened with Direct on a filesystem that
// refuses it: buffered, one log line naming O_DIRECT, and working I/O.
func checkFallback(t *testing.T, d *Device, log *logBuffer) {
	t.Helper()
	if got := d.Backend(); got != "pread/pwrite (buffered)" {
		t.Errorf("Backend() = %q, want buffered", got)
	}
	lines := log.lines()
	if len(lines) != 1 || !strings.Contains(lines[0], "O_DIRECT") || !strings.Contains(lines[0], "level=WARN") {
		t.Errorf("log = %q, want one warning about O_DIRECT", lines)
	}
	b := dev.AlignedBuffer(s)
	b[0] = 42
	if err := d.Write([]dev.IO{{Off: s, Buf: b}}); err != nil {
		t.Fatal(err)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	r := dev.AlignedBuffer(s)
	if err := d.Read([]dev.IO{{Off: s, Buf: r}}); err != nil || r[0] != 42 {
		t.Errorf("read back: %v, byte %d", err, r[0])
	}
}

// TestOpen_DirectEINVALAtOpen_FallsBack: a filesystem that refuses O_DIRECT
// at open (tmpfs before Linux 6.6) gives a buffered device and one log line.
func TestOpen_DirectEINVALAtOpen_FallsBack(t *testing.T) {
	sys := realSyscalls
	sys.open = func(path string, flags int, mode uint32) (int, error) {
		if flags&unix.O_DIRECT != 0 {
			return -1, unix.EINVAL
		}
		return unix.Open(path, flags, mode)
	}
	var log logBuffer
	d, err := Open(filepath.Join(t.TempDir(), "dev"), Options{Size: 1 << 20, Direct: true, Logger: log.logger(), sys: &sys})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	checkFallback(t, d, &log)
}

// TestOpen_DirectEINVALAtRead_FallsBack: a filesystem that takes O_DIRECT at
// open but refuses the I/O is found by the probe read, with the same result.
func TestOpen_DirectEINVALAtRead_FallsBack(t *testing.T) {
	var direct directFDs
	sys := realSyscalls
	sys.open = func(path string, flags int, mode uint32) (int, error) {
		fd, err := unix.Open(path, flags, mode)
		if err == nil {
			direct.set(fd, flags&unix.O_DIRECT != 0)
		}
		return fd, err
	}
	sys.pread = func(fd int, p []byte, off int64) (int, error) {
		if direct.get(fd) {
			return -1, unix.EINVAL
		}
		return unix.Pread(fd, p, off)
	}
	var log logBuffer
	d, err := Open(filepath.Join(t.TempDir(), "dev"), Options{Size: 1 << 20, Direct: true, Logger: log.logger(), sys: &sys})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	checkFallback(t, d, &log)
}

// TestOpen_DirectOtherError_Fails: only EINVAL means "no O_DIRECT here";
// any other open error is returned.
func TestOpen_DirectOtherError_Fails(t *testing.T) {
	sys := realSyscalls
	sys.open = func(string, int, uint32) (int, error) { return -1, unix.EACCES }
	_, err := Open(filepath.Join(t.TempDir(), "dev"), Options{Size: 1 << 20, Direct: true, Logger: quietLogger(), sys: &sys})
	if !errors.Is(err, unix.EACCES) {
		t.Errorf("got %v, want EACCES", err)
	}
}

// TestOpen_Size covers how Options.Size and the file's length make the
// device's size.
func TestOpen_Size(t *testing.T) {
	dir := t.TempDir()
	open := func(name string, size int64) (*Device, error) {
		return Open(filepath.Join(dir, name), Options{Size: size, Logger: quietLogger()})
	}
	mustSize := func(name string, size, want int64) {
		t.Helper()
		d, err := open(name, size)
		if err != nil {
			t.Fatalf("Open(%s, Size %d): %v", name, size, err)
		}
		defer d.Close()
		if d.Size() != want {
			t.Errorf("Open(%s, Size %d).Size() = %d, want %d", name, size, d.Size(), want)
		}
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() < want {
			t.Errorf("file %s: %v, size %d, want at least %d", name, err, fi.Size(), want)
		}
	}
	// A missing file is created at Size, its space allocated (extend) —
	// where this filesystem has fallocate at all.
	mustSize("new", 64*s, 64*s)
	mustAllocated(t, dir, "new", 64*s)
	// A smaller file is extended, its data kept.
	path := filepath.Join(dir, "small")
	if err := os.WriteFile(path, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustSize("small", 8*s, 8*s)
	mustAllocated(t, dir, "small", 8*s)
	if b, err := os.ReadFile(path); err != nil || !strings.HasPrefix(string(b), "keep me") {
		t.Errorf("extended file lost its data: %v %q", err, b[:7])
	}
	// A larger file keeps its length; Size 0 takes the file as it is.
	mustSize("new", 16*s, 64*s)
	mustSize("new", 0, 64*s)
	// A length that is not a whole number of sectors is rounded down.
	if err := os.WriteFile(filepath.Join(dir, "ragged"), make([]byte, 3*s+100), 0o600); err != nil {
		t.Fatal(err)
	}
	mustSize("ragged", 0, 3*s)

	// More than the filesystem has free is refused, with ENOSPC, and
	// without allocating anything first.
	var sfs unix.Statfs_t
	if err := unix.Statfs(dir, &sfs); err != nil {
		t.Fatal(err)
	}
	huge := int64(sfs.Blocks*uint64(sfs.Bsize)+1<<30) &^ (s - 1)
	if _, err := open("huge", huge); !errors.Is(err, unix.ENOSPC) || !strings.Contains(err.Error(), "free on its filesystem") {
		t.Errorf("Size %d, more than the filesystem holds: got %v, want ENOSPC", huge, err)
	}
	if _, err := open("missing", 0); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file with Size 0: got %v, want fs.ErrNotExist", err)
	}
	for _, size := range []int64{-s, s + 1, 512} {
		if _, err := open("bad", size); !errors.Is(err, ErrSize) {
			t.Errorf("Size %d: got %v, want ErrSize", size, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "tiny"), make([]byte, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := open("tiny", 0); !errors.Is(err, ErrSize) {
		t.Errorf("file of 100 bytes: got %v, want ErrSize", err)
	}
}

func TestOpen_BlockDeviceTooSmall(t *testing.T) {
	path := loopDevice(t, 1<<20)
	if _, err := Open(path, Options{Size: 2 << 20, Logger: quietLogger()}); !errors.Is(err, ErrSize) {
		t.Errorf("Open(1 MiB loop device, Size 2 MiB): got %v, want ErrSize", err)
	}
	d, err := Open(path, Options{Size: 1 << 20, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Size() != 1<<20 {
		t.Errorf("Size() = %d, want 1 MiB", d.Size())
	}
}

func TestOpen_Directory_ErrFileType(t *testing.T) {
	_, err := Open(t.TempDir(), Options{Logger: quietLogger()})
	if !errors.Is(err, ErrFileType) && !errors.Is(err, unix.EISDIR) {
		t.Errorf("got %v, want ErrFileType or EISDIR", err)
	}
	if _, err := Open("/dev/null", Options{Logger: quietLogger()}); !errors.Is(err, ErrFileType) {
		t.Errorf("/dev/null: got %v, want ErrFileType", err)
	}
}

func TestOpen_Workers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dev")
	for _, n := range []int{-1, workersMax + 1} {
		if _, err := Open(path, Options{Size: s, Workers: n}); !errors.Is(err, ErrWorkers) {
			t.Errorf("Workers %d: got %v, want ErrWorkers", n, err)
		}
	}
	d, err := Open(path, Options{Size: s})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if cap(d.jobs) != workersDefault {
		t.Errorf("default pool: %d, want %d", cap(d.jobs), workersDefault)
	}
}

// mustAllocated checks that name in dir has at least want bytes allocated
// (no hole): Open extends a file with fallocate. On a filesystem without
// fallocate it accepts a sparse file, which is what Open makes there.
func mustAllocated(t *testing.T, dir, name string, want int64) {
	t.Helper()
	probe, err := os.CreateTemp(dir, "fallocate-probe")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(probe.Name())
	defer probe.Close()
	if err := unix.Fallocate(int(probe.Fd()), 0, 0, 4096); errors.Is(err, unix.EOPNOTSUPP) {
		t.Logf("%s: no fallocate on this filesystem, so a sparse file is right", dir)
		return
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(dir, name), &st); err != nil {
		t.Fatal(err)
	}
	if st.Blocks*512 < want {
		t.Errorf("file %s: %d bytes allocated, want at least %d (a hole where Open should allocate)", name, st.Blocks*512, want)
	}
}
