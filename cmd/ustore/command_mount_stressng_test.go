package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// stressNG is one stress-ng stressor on the mount: `stress-ng --NAME 1
// --NAME-ops OPS --verify ARGS...` in a fresh directory. It is bounded
// by its operation count, never by time: stress-ng's --timeout stops a
// stressor with a signal, which interrupts the FUSE request it is in
// (EINTR), and the stressor reports that as a failure of the
// filesystem. --verify checks what the stressors that support it read
// back (hdd, readahead, seek, mmap, msync, copy-file, aio, io-uring,
// iomix, revio, ...); the others ignore it.
type stressNG struct {
	name string
	ops  int
	args []string
}

// stressorsOnMount pass on today's mount. The counts keep the whole list
// under ~40 s on 2 shared CPUs (link is 16 s of it: each op makes 8192
// hard links, and from the 180th or so each answers EMLINK, as btrfs's
// does, since the inode refs of one file in one directory share a leaf:
// store/name_room.go).
var stressorsOnMount = []stressNG{
	{"dir", 200, nil},
	{"dirdeep", 200, nil},
	{"dirmany", 50, nil},
	{"chdir", 20, []string{"--chdir-dirs", "64"}},
	{"rename", 200, nil},
	{"dentry", 100, nil},
	{"filename", 100, nil},
	{"open", 200, nil},
	{"fstat", 200, nil},
	{"chmod", 50, nil},
	{"chown", 100, nil},
	{"utime", 200, nil},
	{"link", 1, nil},
	{"hdd", 200, []string{"--hdd-bytes", "4m", "--hdd-opts", "wr-rnd,rd-rnd"}},
	{"seek", 200, nil},
	{"readahead", 100, nil},
	{"revio", 50, nil},
	{"mmap", 4, []string{"--mmap-bytes", "256k", "--mmap-file"}},
	{"msync", 50, nil},
	{"fcntl", 200, nil},
	{"lockf", 200, nil},
	{"flock", 200, nil},
	{"locka", 50, nil},
	{"lease", 50, nil},
	{"copy-file", 20, nil},
	{"sendfile", 50, nil},
	{"aio", 50, nil},
	{"fsize", 20, nil},
	// Both fall back to writing the file full when fallocate is refused;
	// with fallocate they will allocate instead.
	{"sync-file", 5, []string{"--sync-file-bytes", "1m"}},
	{"iomix", 5, []string{"--iomix-bytes", "1m"}},
	{"file-ioctl", 50, nil},
	{"dnotify", 50, nil},
	{"inotify", 5, nil},
	{"symlink", 1, nil},
	{"fallocate", 20, nil},
	{"xattr", 2, nil},
}

// stressorsNeeding are the stressors that need something today's mount
// lacks: each skips itself, or spins on the refused call without
// counting an operation until a timeout stops it. When the mount gains
// the feature, TestMount_StressNG fails until its stressors move to
// stressorsOnMount: one line each.
var stressorsNeeding = []struct {
	stressor stressNG
	needs    mountFeature
}{
	// It fills holes with FALLOC_FL_ZERO_RANGE, COLLAPSE_RANGE and
	// INSERT_RANGE beside PUNCH_HOLE (stress-ng(1)); the store has
	// PUNCH_HOLE only, and its children retry the refused modes without
	// counting an operation.
	{stressNG{"fpunch", 1, nil}, featureZeroRange},
	// chattr's flags (FS_IOC_GETFLAGS answers ENOTTY: the store keeps none).
	{stressNG{"inode-flags", 20, nil}, featureInodeFlags},
	// Its IORING_OP_STATX asks for the attributes of an unlinked file
	// through an O_PATH descriptor. An O_PATH open never reaches the
	// mount, so it holds no server handle, and the store frees the inode
	// at its last unlink: that answers ENOENT where Linux answers nlink
	// 0. Orphan items keep only files the mount has open.
	{stressNG{"io-uring", 50, nil}, featureUnlinkedStat},
}

// stressorsOffFUSE cannot pass on any FUSE filesystem, so they are not
// run: what each trips on is the kernel's FUSE, not the mount.
var stressorsOffFUSE = map[string]string{
	// The kernel's FUSE has no fiemap.
	"fiemap": "FS_IOC_FIEMAP answers EOPNOTSUPP on every FUSE filesystem",
	// Its four children make and unlink files until the parent stops them
	// with SIGALRM; FUSE answers EINTR to a request a signal catches
	// before the server has read it (request_wait_answer), so an unlink
	// is not done, the child does not retry it, and the parent's rmdir
	// fails with ENOTEMPTY (about one run in three here).
	"touch": "stopped by a signal, an unlink answers EINTR and the directory stays non-empty",
}

// mountFeature is something a stressor needs: probe answers nil where
// the mount has it.
type mountFeature struct {
	name  string
	probe func(dir string) error
}

var (
	featureZeroRange = mountFeature{"fallocate ZERO_RANGE", func(dir string) error {
		return withProbeFile(dir, func(f *os.File) error {
			return unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_ZERO_RANGE, 0, 4096)
		})
	}}
	featureInodeFlags = mountFeature{"FS_IOC_GETFLAGS", func(dir string) error {
		return withProbeFile(dir, func(f *os.File) error {
			_, err := unix.IoctlGetInt(int(f.Fd()), unix.FS_IOC_GETFLAGS)
			return err
		})
	}}
	featureUnlinkedStat = mountFeature{"stat of an unlinked file through an O_PATH descriptor", func(dir string) error {
		name := filepath.Join(dir, "unlinked")
		if err := os.WriteFile(name, []byte("data"), 0o644); err != nil {
			return err
		}
		fd, err := unix.Open(name, unix.O_PATH, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if err := os.Remove(name); err != nil {
			return err
		}
		var stx unix.Statx_t // FORCE_SYNC: past the kernel's attribute cache, to the store
		return unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_FORCE_SYNC, unix.STATX_BASIC_STATS, &stx)
	}}
)

// withProbeFile calls probe with a new 8 KiB file in dir.
func withProbeFile(dir string, probe func(*os.File) error) error {
	f, err := os.CreateTemp(dir, "probe")
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 8192)); err != nil {
		return err
	}
	return probe(f)
}

// stressorTimeout only stops a stressor that hangs (the test then fails);
// the counts above end each in a few seconds.
const stressorTimeout = 3 * time.Minute

// TestMount_StressNG: every stressor of stressorsOnMount on the mount,
// each in a fresh directory, each completing its operation count with
// nothing failed or skipped; then the store unmounted, the server
// stopped, and fsck --data clean. The features stressorsNeeding waits
// for must still be missing.
func TestMount_StressNG(t *testing.T) {
	notUnderRace(t)
	stressng := needTool(t, "stress-ng", "stress-ng")
	ms := newMountedStore(t)
	work := t.TempDir() // stress-ng's own files (none expected), off the mount
	for _, s := range stressorsOnMount {
		if why, off := stressorsOffFUSE[s.name]; off {
			t.Fatalf("stress-ng's %s is in stressorsOnMount and stressorsOffFUSE (%s)", s.name, why)
		}
	}
	for _, s := range stressorsOnMount {
		t.Run(s.name, func(t *testing.T) {
			dir := filepath.Join(ms.mnt(), s.name)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), stressorTimeout)
			defer cancel()
			args := append([]string{"--" + s.name, "1", "--" + s.name + "-ops", strconv.Itoa(s.ops),
				"--temp-path", dir, "--verify", "--metrics-brief"}, s.args...)
			cmd := exec.CommandContext(ctx, stressng, args...)
			cmd.Dir = work
			start := time.Now()
			out, err := cmd.CombinedOutput()
			if err != nil || strings.Contains(string(out), "skipping") || strings.Contains(string(out), "fail:") {
				t.Fatalf("stress-ng %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			if n := stressorOps(string(out), s.name); n < s.ops {
				t.Fatalf("stress-ng %s: %d bogo ops, want %d\n%s", s.name, n, s.ops, out)
			}
			t.Logf("%d ops in %v", s.ops, time.Since(start).Round(time.Millisecond))
			// What the stressor left (it removes its own directory).
			if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
				t.Errorf("%s left %d entries behind (%v)", s.name, len(ents), err)
			}
		})
	}
	probeDir := filepath.Join(ms.mnt(), "probe")
	if err := os.Mkdir(probeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range stressorsNeeding {
		if err := s.needs.probe(probeDir); err == nil {
			t.Errorf("the mount has %s now: move stress-ng's %s from stressorsNeeding to stressorsOnMount", s.needs.name, s.stressor.name)
		} else if !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.EOPNOTSUPP) && !errors.Is(err, syscall.ENOTTY) &&
			!errors.Is(err, syscall.ESTALE) && !errors.Is(err, syscall.ENOENT) {
			t.Errorf("probe of %s (for stress-ng's %s): %v, want the errno of a filesystem without it", s.needs.name, s.stressor.name, err)
		}
	}
	ms.downAndFsck(t)
}

// stressorOps reads a stressor's bogo-op count from stress-ng's
// --metrics-brief table ("stress-ng: metrc: [PID] NAME OPS ...").
func stressorOps(out, name string) int {
	m := regexp.MustCompile(`metrc: \[\d+\] ` + regexp.QuoteMeta(name) + `\s+(\d+)\s`).FindStringSubmatch(out)
	if m == nil {
		return -1
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		panic(fmt.Sprintf("stressorOps: %q: %v", m[1], err))
	}
	return n
}
