package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestCommand_Serve_EnvBadValueNamesVariable: a variable serve refuses is a
// usage error that names the variable, whether the flag's parser refuses it
// or serve's own checks do.
func TestCommand_Serve_EnvBadValueNamesVariable(t *testing.T) {
	for _, tc := range []struct{ env, value, want string }{
		{"USTORE_CONN_MAX", "x", `ustore: $USTORE_CONN_MAX="x" (--conn-max): invalid argument "x" for "--conn-max" flag: strconv.ParseInt: parsing "x": invalid syntax`},
		{"USTORE_READ_ONLY", "maybe", `ustore: $USTORE_READ_ONLY="maybe" (--read-only): invalid argument "maybe" for "--read-only" flag: strconv.ParseBool: parsing "maybe": invalid syntax`},
		{"USTORE_INFLIGHT_SIZE", "lots", `ustore: --inflight-size: "lots" is not a byte count (examples: 4096, 4k, 16M, 1G) (set by $USTORE_INFLIGHT_SIZE)`},
		{"USTORE_SOCKET_MODE", "999", `ustore: --socket-mode "999": want octal permission bits, such as 0660 (set by $USTORE_SOCKET_MODE)`},
		{"USTORE_LOG_LEVEL", "loud", `ustore: --log-level: slog: level string "loud": unknown name (set by $USTORE_LOG_LEVEL)`},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(tc.env, tc.value)
			_, err := run(t, "serve")
			if exitCode(err) != exitUsage || message(err) != tc.want {
				t.Fatalf("%s=%s: exit %d\n got: %s\nwant: %s", tc.env, tc.value, exitCode(err), message(err), tc.want)
			}
		})
	}
}

// TestCommand_Serve_EnvFlagWins: a flag on the command line wins over its
// variable. --conn-max is checked before --idle-timeout: with the
// variable's bad value used, the error would be about --conn-max.
func TestCommand_Serve_EnvFlagWins(t *testing.T) {
	t.Setenv("USTORE_CONN_MAX", "0")
	t.Setenv("USTORE_SOCKET", "/nonexistent/s.sock") // --socket-mode's neighbour is not blamed
	_, err := run(t, "serve", "--conn-max", "10", "--socket-mode", "rwx")
	want := `ustore: --socket-mode "rwx": want octal permission bits, such as 0660`
	if exitCode(err) != exitUsage || message(err) != want {
		t.Fatalf("got exit %d %s\nwant %s", exitCode(err), message(err), want)
	}
}

// TestApplyFlagEnv_EveryServeFlag: every flag of serve, hidden ones too,
// takes its USTORE_ variable.
func TestApplyFlagEnv_EveryServeFlag(t *testing.T) {
	c := newServeCommand()
	fs := c.Flags()
	var names []string
	vals := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" {
			return
		}
		names = append(names, f.Name)
		// A value each flag accepts: its default, without a slice's brackets.
		vals[flagEnvName(f.Name)] = strings.Trim(f.DefValue, "[]")
	})
	if len(names) < 30 {
		t.Fatalf("serve has %d flags: %v", len(names), names)
	}
	fromEnv, err := applyFlagEnv(fs, func(k string) (string, bool) { v, ok := vals[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if fromEnv[n] != flagEnvName(n) || !fs.Lookup(n).Changed {
			t.Errorf("--%s not set from $%s", n, flagEnvName(n))
		}
	}
	if got := flagEnvName("inflight-size"); got != "USTORE_INFLIGHT_SIZE" {
		t.Errorf("flagEnvName(inflight-size) = %s", got)
	}
}

func TestMentionsFlag_Cases(t *testing.T) {
	for _, tc := range []struct {
		msg, name string
		want      bool
	}{
		{"--socket-mode \"x\": bad", "socket", false},
		{"--socket-mode \"x\": bad", "socket-mode", true},
		{"bad --socket", "socket", true},
		{"--socket-mode and --socket: bad", "socket", true},
		{"--conn-max, --conn-per-uid", "conn-per-uid", true},
		{"--sizes", "size", false},
	} {
		if got := mentionsFlag(tc.msg, tc.name); got != tc.want {
			t.Errorf("mentionsFlag(%q, %q) = %v", tc.msg, tc.name, got)
		}
	}
}

// TestCommand_Serve_FromEnvOnly runs the real binary configured by
// variables alone, as contrib/systemd/ustore.service does: the device, its
// size, the socket and its mode all come from USTORE_*.
func TestCommand_Serve_FromEnvOnly(t *testing.T) {
	bin := buildUstore(t)
	dir := t.TempDir()
	dev, sock := filepath.Join(dir, "state", "data.img"), filepath.Join(dir, "run", "ustore.sock")
	for _, d := range []string{filepath.Dir(dev), filepath.Dir(sock)} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("USTORE_DEVICE", dev)
	t.Setenv("USTORE_SIZE", "64M")
	t.Setenv("USTORE_SOCKET", sock)
	t.Setenv("USTORE_SOCKET_MODE", "0600")
	t.Setenv("USTORE_EBPF", "off")
	p := startServe(t, bin)
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket %s: mode %v, want a socket with 0600", sock, fi.Mode())
	}
	if fi, err := os.Stat(dev); err != nil || fi.Size() != 64<<20 {
		t.Errorf("device %s: %v %v, want 64 MiB", dev, fi, err)
	}
	p.waitLog(t, `msg="ustore serving" device=`+dev)
	p.stop(t)
}
