package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: what the command writes to tty, a
// terminal as far as it can tell, is read from master.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	master = os.NewFile(uintptr(fd), "/dev/ptmx")
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return master, tty
}

// runStderr runs a command with its stderr on errw and returns its stdout.
func runStderr(t *testing.T, errw io.Writer, args ...string) (string, error) {
	t.Helper()
	root := newRootCommand()
	var out bytes.Buffer
	root.SetIn(strings.NewReader(""))
	root.SetOut(&out)
	root.SetErr(errw)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// TestClient_PutGet_ProgressBar: put and get of a large file draw a bar
// with the bytes, the rate and the time left when stderr is a terminal,
// and nothing into a pipe; a small file draws none on a terminal either.
func TestClient_PutGet_ProgressBar(t *testing.T) {
	sock := startTestServer(t)
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	data := bytes.Repeat([]byte("0123456789abcdef"), (transferProgressBytesMin+1<<20)/16)
	if err := os.WriteFile(big, data, 0o600); err != nil {
		t.Fatal(err)
	}
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}

	// A terminal: the bar, drawn and read back through the pty's master
	// (read by another goroutine: a pty holds only a few KiB).
	master, tty := openPTY(t)
	drawn := make(chan string, 1)
	go func() {
		var b bytes.Buffer
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				drawn <- b.String()
				return
			}
		}
	}()
	for _, args := range [][]string{
		{"put", "/big", big},
		{"get", "/big", "-o", filepath.Join(dir, "big.copy")},
		{"put", "/small", small},
	} {
		if _, err := runStderr(t, tty, append(args, "--socket", sock)...); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	tty.Close() // the master then reads EIO: the end
	out := <-drawn
	for _, want := range []string{"put /big 100% |", "get /big 100% |", "/18 MB, ", " MB/s) ["} {
		if !strings.Contains(out, want) {
			t.Errorf("the terminal lacks %q:\n%q", want, out)
		}
	}
	if strings.Contains(out, "/small") {
		t.Errorf("a bar for a 5-byte file:\n%q", out)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "big.copy")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get -o: %v, %d bytes, want the %d put", err, len(got), len(data))
	}

	// A pipe: no bar, not even a byte, with the default --progress auto.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, args := range [][]string{{"put", "/big2", big}, {"get", "/big", "-o", filepath.Join(dir, "big.copy2")}} {
		if _, err := runStderr(t, w, append(args, "--socket", sock)...); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	w.Close()
	if piped, _ := io.ReadAll(r); len(piped) != 0 {
		t.Errorf("stderr a pipe: %q, want nothing", piped)
	}

	// --progress always draws anywhere; a bad value is a usage error.
	var buf bytes.Buffer
	if _, err := runStderr(t, &buf, "put", "/small2", small, "--progress", "always", "--socket", sock); err != nil ||
		!strings.Contains(buf.String(), "put /small2 100% |") {
		t.Errorf("--progress always: %v %q", err, buf.String())
	}
	_, err = runStderr(t, io.Discard, "get", "/big", "--progress", "sometimes", "--socket", filepath.Join(dir, "no.sock"))
	if want := `ustore: --progress "sometimes": want auto (a terminal and at least 16 MiB), always, never`; exitCode(err) != exitUsage || message(err) != want {
		t.Errorf("--progress sometimes: exit %d %s, want %s", exitCode(err), message(err), want)
	}
}
