package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The helpers of the tests that run programs nobody here wrote on the
// mount (stress-ng, sqlite3, rsync, sysbench): each program is found or
// the test skips naming its package (.ci/run installs them all), and
// each test ends with the store unmounted, the server stopped and the
// device checked, data blocks included.

// notUnderRace skips a program test under the race detector. With a
// race-built server and mount, stress-ng, sqlite3, rsync and sysbench
// made most of cmd/ustore's race run (692 s of it on 2 cores, past go
// test's default timeout); `make norace` runs them once without it, so
// CI runs every one. The other mount tests keep the server and the mount
// under the race detector.
func notUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("a real program's whole run through a race-built server and mount: too slow under the race detector; make norace runs it")
	}
}

// needTool skips the test where the program is missing.
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("no %s (apt-get install %s; .ci/run installs it)", name, pkg)
	}
	return path
}

// mountedStore is a server on a fresh device file and the store mounted
// from it, for one test.
type mountedStore struct {
	bin, dir, img, sock string
	serve               *serveProc
	mount               *mountProc
}

// newMountedStore builds ustore, starts a server on dir/d.img and mounts
// it at dir/mnt.
func newMountedStore(t *testing.T) *mountedStore {
	t.Helper()
	needFUSE(t)
	ms := &mountedStore{bin: buildUstore(t), dir: t.TempDir()}
	ms.img = filepath.Join(ms.dir, "d.img")
	ms.serve, ms.mount, ms.sock = serveAndMount(t, ms.bin, ms.dir)
	return ms
}

// mnt is the mount point.
func (ms *mountedStore) mnt() string { return ms.mount.dir }

// down unmounts with `ustore umount`, waits for the mount to exit 0, and
// stops the server with SIGTERM (exit 0: everything written back and
// committed).
func (ms *mountedStore) down(t *testing.T) {
	t.Helper()
	if out, err := exec.Command(ms.bin, "umount", ms.mnt()).CombinedOutput(); err != nil {
		t.Fatalf("umount: %s %v", out, err)
	}
	ms.mount.wait(t)
	ms.serve.stop(t)
}

// up starts a server on the same device again and mounts it again.
func (ms *mountedStore) up(t *testing.T) {
	t.Helper()
	ms.serve = startServe(t, ms.bin, "--device", ms.img, "--socket", ms.sock)
	ms.mount = startMount(t, ms.bin, ms.sock, ms.mnt())
}

// downAndFsck is down, then `ustore fsck --data` on the device: every
// tree, the namespace, and every data block against its checksum must
// be clean.
func (ms *mountedStore) downAndFsck(t *testing.T) {
	t.Helper()
	ms.down(t)
	out, err := exec.Command(ms.bin, "fsck", "--data", ms.img).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "clean") {
		t.Fatalf("fsck --data after %s: %v\n%s", t.Name(), err, out)
	}
}
