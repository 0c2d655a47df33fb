package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The files of contrib/systemd/, checked here against the command they
// run: a unit whose flags or variables serve does not know would fail at
// start, on the operator's machine.
const (
	unitPath     = "../../contrib/systemd/ustore.service"
	sysusersPath = "../../contrib/systemd/ustore.sysusers"
	envFilePath  = "../../contrib/systemd/ustore.env"
	unitBinary   = "/usr/local/bin/ustore"
)

// unitKeys reads a unit file's Key=Value lines, in order (a key may
// repeat, as Environment= does).
func unitKeys(t *testing.T, path string) [][2]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var kv [][2]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' || line[0] == '[' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: %q is not Key=Value", path, line)
		}
		kv = append(kv, [2]string{k, v})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return kv
}

// TestSystemdUnit_MatchesServe: the unit runs `ustore serve` with flags
// its --help lists, and each USTORE_ variable it or the example
// environment file sets is a flag of serve, with a value the flag takes.
func TestSystemdUnit_MatchesServe(t *testing.T) {
	help, err := run(t, "serve", "--help")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	var exec []string
	user := ""
	for _, kv := range unitKeys(t, unitPath) {
		switch kv[0] {
		case "ExecStart":
			exec = strings.Fields(kv[1])
		case "Environment":
			name, val, _ := strings.Cut(kv[1], "=")
			env[name] = val
		case "User":
			user = kv[1]
		}
	}
	if len(exec) < 2 || exec[0] != unitBinary || exec[1] != "serve" {
		t.Fatalf("ExecStart=%v, want %s serve ...", exec, unitBinary)
	}
	for _, a := range exec[2:] {
		if name, ok := strings.CutPrefix(a, "--"); ok && !strings.Contains(help, "--"+strings.SplitN(name, "=", 2)[0]+" ") {
			t.Errorf("ExecStart's %s is not in serve --help", a)
		}
	}
	// The example environment file's lines, commented out, must name
	// flags and hold values they take too.
	f, err := os.ReadFile(envFilePath)
	if err != nil {
		t.Fatal(err)
	}
	fileEnv := map[string]string{}
	for _, line := range strings.Split(string(f), "\n") {
		if name, val, ok := strings.Cut(strings.TrimPrefix(line, "#"), "="); ok && strings.HasPrefix(name, serveEnvPrefix) {
			fileEnv[name] = val
		}
	}
	if len(fileEnv) == 0 {
		t.Fatalf("%s sets no %s variable", envFilePath, serveEnvPrefix)
	}
	for _, set := range []map[string]string{env, fileEnv} {
		fs := newServeCommand().Flags()
		fromEnv, err := applyFlagEnv(fs, func(k string) (string, bool) { v, ok := set[k]; return v, ok })
		if err != nil {
			t.Fatal(err)
		}
		if len(fromEnv) != len(set) {
			t.Errorf("variables %v: serve took %v; the others name no flag", set, fromEnv)
		}
	}
	if env["USTORE_SOCKET"] != "/run/ustore/ustore.sock" || !strings.HasPrefix(env["USTORE_DEVICE"], "/var/lib/ustore/") {
		t.Errorf("the socket and device are not in RuntimeDirectory= and StateDirectory=: %v", env)
	}
	users, err := os.ReadFile(sysusersPath)
	if err != nil {
		t.Fatal(err)
	}
	if user == "" || !strings.Contains(string(users), "\nu "+user+" ") {
		t.Errorf("User=%s is not created by %s", user, sysusersPath)
	}
}

// TestSystemdUnit_Verify runs systemd-analyze verify on the unit, with its
// ExecStart pointed at an executable that exists here (verify checks it),
// and fails on anything it says about the unit: verify exits 0 after an
// unknown key or a system call it cannot parse, and only warns.
func TestSystemdUnit_Verify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed (CI installs systemd in .ci/run)")
	}
	unit, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ustore.service")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(unit), unitBinary, self)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", "--man=no", path).CombinedOutput()
	if err != nil || strings.Contains(string(out), "ustore.service") {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
