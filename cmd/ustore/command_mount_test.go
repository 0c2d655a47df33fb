package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// needFUSE skips a test where it cannot mount: no /dev/fuse, or neither
// root (a direct mount) nor fusermount3. CI runs as root with /dev/fuse.
func needFUSE(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no /dev/fuse (%v): this machine cannot mount FUSE filesystems", err)
	}
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			t.Skip("not root, and no fusermount3 (apt-get install fuse3) to mount as a user")
		}
	}
}

// mountProc is a running `ustore mount`.
type mountProc struct {
	cmd    *exec.Cmd
	dir    string
	stderr *syncBuffer
	exited chan struct{} // closed when the process has exited; then err is set
	err    error
}

// startMount runs `ustore mount --socket sock dir` and returns once it
// says it has mounted. At the end of the test a mount still there is
// detached (lazily, so that nothing hangs on it) and the process killed.
func startMount(t *testing.T, bin, sock, dir string, args ...string) *mountProc {
	t.Helper()
	p := &mountProc{dir: dir, stderr: &syncBuffer{}, exited: make(chan struct{}),
		cmd: exec.Command(bin, append([]string{"mount", "--socket", sock, dir}, args...)...)}
	pr, pw := io.Pipe()
	p.cmd.Stderr = io.MultiWriter(p.stderr, pw)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		pw.Close()
		close(p.exited)
	}()
	t.Cleanup(func() {
		if mounted(t, dir) {
			unix.Unmount(dir, unix.MNT_DETACH)
		}
		p.cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("mount's log:\n%s", p.stderr.String())
		}
	})
	// The first line is "mounted" or why not; the pipe is drained after
	// it so that the process never blocks on it.
	line, err := bufio.NewReader(pr).ReadString('\n')
	go io.Copy(io.Discard, pr)
	if !strings.Contains(line, "ustore: mounted ") {
		<-p.exited
		t.Fatalf("mount: %q %v (%v)\n%s", line, err, p.err, p.stderr.String())
	}
	return p
}

// wait waits for the mount process to exit and checks that it exited 0.
func (p *mountProc) wait(t *testing.T) {
	t.Helper()
	select {
	case <-p.exited:
		if p.err != nil {
			t.Fatalf("mount exited: %v\n%s", p.err, p.stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("mount did not exit\n%s", p.stderr.String())
	}
}

// mounted reports whether dir is a mount point now.
func mounted(t *testing.T, dir string) bool {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == dir {
			return true
		}
	}
	return false
}

// serveAndMount starts a server on a fresh device file in dir and mounts
// it at dir/mnt.
func serveAndMount(t *testing.T, bin, dir string) (*serveProc, *mountProc, string) {
	t.Helper()
	sock := filepath.Join(dir, "s.sock")
	s := startServe(t, bin, "--device", filepath.Join(dir, "d.img"), "--size", "512M", "--socket", sock)
	mnt := filepath.Join(dir, "mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	return s, startMount(t, bin, sock, mnt), sock
}

// TestMount_Errors: the one-line errors of mount and umount, with no
// FUSE needed (the mount point and the server are checked first).
func TestMount_Errors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := startTestServer(t)
	for _, c := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"mount", "--socket", sock, file}, "ustore: mount " + file + ": not a directory", 1},
		{[]string{"mount", "--socket", sock, dir + "/missing"}, "ustore: mount " + dir + "/missing: no such file or directory", 1},
		{[]string{"mount", "--socket", dir + "/none.sock", dir}, "ustore: connect to " + dir + "/none.sock: no such file or directory (is the server running? start it with 'ustore serve', or point --socket or $USTORE_SOCKET at its socket)", 1},
		{[]string{"mount", "--socket", sock, "--conns", "0", dir}, "ustore: --conns 0: want 1 to 16", 2},
		{[]string{"mount", "--socket", sock}, "", 2},
		{[]string{"umount", dir}, "ustore: umount " + dir + ": not a mount point", 1},
	} {
		if _, err := os.Stat("/dev/fuse"); err != nil && c.args[0] == "mount" && c.code == 1 {
			c.want = "ustore: mount " + c.args[len(c.args)-1] + ": /dev/fuse is missing: load the module (modprobe fuse) or, in a container, pass the device (--device /dev/fuse)"
		}
		_, _, err := runIO(t, nil, c.args...)
		if got := exitCode(err); got != c.code {
			t.Errorf("%v: exit %d (%v), want %d", c.args, got, err, c.code)
		}
		if c.want != "" && (err == nil || message(err) != c.want) {
			t.Errorf("%v:\n got %v\nwant %s", c.args, err, c.want)
		}
	}
}

// TestMount_Lifecycle: mount, use, a second mount refused as busy,
// `ustore umount` ends the mount process with 0; mount again, SIGTERM
// with a file open says busy and keeps the mount, SIGTERM after the
// close unmounts and exits 0.
func TestMount_Lifecycle(t *testing.T) {
	needFUSE(t)
	bin := buildUstore(t)
	dir := t.TempDir()
	_, m, sock := serveAndMount(t, bin, dir)
	mnt := m.dir
	if err := os.WriteFile(filepath.Join(mnt, "hello"), []byte("through the mount\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "cat", "--socket", sock, "/hello").CombinedOutput()
	if err != nil || string(out) != "through the mount\n" {
		t.Fatalf("ustore cat of a file written through the mount: %q %v", out, err)
	}
	out, err = exec.Command(bin, "mount", "--socket", sock, mnt).CombinedOutput()
	if want := "ustore: mount " + mnt + ": busy: something is mounted there already (detach it with 'ustore umount " + mnt + "')\n"; err == nil || string(out) != want {
		t.Errorf("a second mount: %q %v, want %q", out, err, want)
	}
	if out, err := exec.Command(bin, "umount", mnt).CombinedOutput(); err != nil {
		t.Fatalf("umount: %s %v", out, err)
	}
	m.wait(t)
	if mounted(t, mnt) {
		t.Fatal("still mounted after umount")
	}

	m = startMount(t, bin, sock, mnt)
	f, err := os.Open(filepath.Join(mnt, "hello"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out, err = exec.Command(bin, "umount", mnt).CombinedOutput()
	if want := "ustore: umount " + mnt + ": busy: a program has a file or its working directory there\n"; err == nil || string(out) != want {
		t.Errorf("umount with a file open: %q %v, want %q", out, err, want)
	}
	m.cmd.Process.Signal(syscall.SIGTERM)
	busy := "ustore: " + mnt + " is busy (a program has a file or its working directory there): still mounted\n"
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(m.stderr.String(), busy); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no busy message after SIGTERM with a file open:\n%s", m.stderr.String())
		}
	}
	if !mounted(t, mnt) {
		t.Fatal("SIGTERM with a file open unmounted")
	}
	f.Close()
	m.cmd.Process.Signal(syscall.SIGTERM)
	m.wait(t)
	if mounted(t, mnt) {
		t.Fatal("still mounted after SIGTERM")
	}
}

// TestMount_Programs: programs nobody here wrote, on the mount: cp -r and
// tar round trips compared with diff -r, and a git repository made,
// committed and checked (git needs no symlink: it probes and does without).
func TestMount_Programs(t *testing.T) {
	needFUSE(t)
	bin := buildUstore(t)
	dir := t.TempDir()
	_, m, _ := serveAndMount(t, bin, dir)
	mnt := m.dir
	src, err := filepath.Abs("../../docs")
	if err != nil {
		t.Fatal(err)
	}
	sh := func(script string) {
		t.Helper()
		cmd := exec.Command("bash", "-e", "-o", "pipefail", "-c", script)
		cmd.Dir = mnt
		cmd.Env = append(os.Environ(), "SRC="+src, "MNT="+mnt, "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
	}
	sh(`cp -r "$SRC" cp-docs && diff -r "$SRC" cp-docs`)
	sh(`tar -C "$SRC" -cf - . | (mkdir tar-docs && tar -C tar-docs -xf -) && diff -r "$SRC" tar-docs`)
	sh(`tar -C "$MNT" -cf - tar-docs | tar -C "$HOME" -xf - && diff -r "$SRC" "$HOME/tar-docs"`)
	sh(`mkdir repo && cd repo && cp -r "$SRC" . && git init -q . && git add -A &&
		git -c user.name=t -c user.email=t@t commit -qm one && echo more >> docs/ARCHITECTURE.md &&
		git -c user.name=t -c user.email=t@t commit -qam two && git fsck --strict && git gc -q && git fsck --strict &&
		test "$(git rev-list --count HEAD)" = 2 && git status --porcelain | wc -l | grep -qx 0`)
}

// TestMount_Fio: fio's own verification on the mount — random writes,
// several jobs, fsyncs, checksums read back while writing
// (verify_backlog) — then the server restarted (SIGTERM and a new serve
// on the same device), the store mounted again, and everything fio wrote
// verified once more.
func TestMount_Fio(t *testing.T) {
	needFUSE(t)
	if _, err := exec.LookPath("fio"); err != nil {
		t.Skip("no fio (apt-get install fio; .ci/run installs it)")
	}
	bin := buildUstore(t)
	dir := t.TempDir()
	s, m, sock := serveAndMount(t, bin, dir)
	// fio writes its verify state files into its working directory.
	work := t.TempDir()
	fio := func(args ...string) ([]byte, error) {
		cmd := exec.Command("fio", args...)
		cmd.Dir = work
		return cmd.CombinedOutput()
	}
	job := func(extra ...string) []string {
		return append([]string{"--name=verify", "--directory=" + m.dir, "--rw=randwrite", "--bs=4k", "--size=8m",
			"--numjobs=3", "--fsync=8", "--ioengine=psync", "--verify=crc32c", "--verify_fatal=1",
			"--randrepeat=1", "--group_reporting"}, extra...)
	}
	if out, err := fio(job("--verify_backlog=64")...); err != nil {
		t.Fatalf("fio: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "umount", m.dir).CombinedOutput(); err != nil {
		t.Fatalf("umount: %s %v", out, err)
	}
	m.wait(t)
	s.stop(t)
	startServe(t, bin, "--device", filepath.Join(dir, "d.img"), "--socket", sock)
	m = startMount(t, bin, sock, m.dir)
	out, err := fio(job("--verify_only")...)
	if err != nil {
		t.Fatalf("fio --verify_only after a restart: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("err= 0")) {
		t.Fatalf("fio --verify_only: %s", out)
	}
}

// TestMount_Crash: writers through the mount, each file fsynced before it
// counts; kill -9 of the server; the dead mount detached, the server
// started again on the same device, the store mounted again: every file
// whose fsync returned has its content.
func TestMount_Crash(t *testing.T) {
	needFUSE(t)
	bin := buildUstore(t)
	dir := t.TempDir()
	s, m, sock := serveAndMount(t, bin, dir)
	const writers, files = 4, 40
	content := func(w, i int) []byte {
		return bytes.Repeat([]byte(fmt.Sprintf("writer %d file %d\n", w, i)), 200+i*50)
	}
	type ack struct{ w, i int }
	acked := make(chan ack, writers*files)
	done := make(chan struct{})
	for w := range writers {
		go func() {
			defer func() { done <- struct{}{} }()
			d := filepath.Join(m.dir, fmt.Sprintf("w%d", w))
			if err := os.Mkdir(d, 0o755); err != nil {
				return
			}
			for i := range files {
				f, err := os.Create(filepath.Join(d, fmt.Sprint(i)))
				if err != nil {
					return
				}
				_, err = f.Write(content(w, i))
				if err == nil {
					err = f.Sync()
				}
				f.Close()
				if err != nil {
					return
				}
				acked <- ack{w, i}
				if w == 0 && i == files/2 {
					s.cmd.Process.Kill() // kill -9, mid-way through the writes
				}
			}
		}()
	}
	for range writers {
		<-done
	}
	<-s.exited
	close(acked)
	if out, err := exec.Command(bin, "umount", m.dir).CombinedOutput(); err != nil {
		t.Fatalf("umount of the dead mount: %s %v", out, err)
	}
	m.wait(t)
	startServe(t, bin, "--device", filepath.Join(dir, "d.img"), "--socket", sock)
	m = startMount(t, bin, sock, m.dir)
	n := 0
	for a := range acked {
		got, err := os.ReadFile(filepath.Join(m.dir, fmt.Sprintf("w%d", a.w), fmt.Sprint(a.i)))
		if err != nil || !bytes.Equal(got, content(a.w, a.i)) {
			t.Errorf("w%d/%d, fsynced before the crash: %d bytes, %v", a.w, a.i, len(got), err)
		}
		n++
	}
	if n < files/2 {
		t.Fatalf("only %d files acknowledged before the crash", n)
	}
	t.Logf("%d fsynced files intact after kill -9", n)
}
