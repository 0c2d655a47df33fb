package server

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckSocketPath_Cases: what serve is told before it creates anything —
// and that the check itself removes nothing, not even a stale socket.
func TestCheckSocketPath_Cases(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	live := filepath.Join(dir, "live.sock")
	l, err := net.Listen("unix", live)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	stale := filepath.Join(dir, "stale.sock")
	sl, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	sl.SetUnlinkOnClose(false)
	sl.Close()
	for _, tc := range []struct {
		name, path string
		ok         bool
		is         error
		says       string
	}{
		{"free", filepath.Join(dir, "new.sock"), true, nil, ""},
		{"stale", stale, true, nil, ""},
		{"live", live, false, ErrSocketInUse, ""},
		{"not a socket", plain, false, ErrNotSocket, "remove it or choose another --socket"},
		{"missing directory", filepath.Join(dir, "none", "s.sock"), false, fs.ErrNotExist, ""},
		{"directory is a file", filepath.Join(plain, "s.sock"), false, nil, "not a directory"},
		{"too long", filepath.Join(dir, strings.Repeat("x", socketPathMax)), false, nil, "more than a Unix socket's"},
	} {
		err := CheckSocketPath(tc.path)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case !tc.ok && err == nil:
			t.Errorf("%s: accepted", tc.name)
		case tc.is != nil && !errors.Is(err, tc.is):
			t.Errorf("%s: %v, want %v", tc.name, err, tc.is)
		case tc.says != "" && !strings.Contains(err.Error(), tc.says):
			t.Errorf("%s: %v, want it to say %q", tc.name, err, tc.says)
		}
	}
	for _, p := range []string{stale, live, plain} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("the check removed %s: %v", p, err)
		}
	}
}
