package fusefs_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"ustore/client"
	"ustore/dev/memdev"
	"ustore/fusefs"
	"ustore/server"
	"ustore/store"
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

// mountStore runs a real server on a memdev store and mounts it at a new
// directory with opts; at the end it unmounts, stops the server, and
// checks the store (fsck).
func mountStore(t *testing.T, opts fusefs.Options) string {
	t.Helper()
	dir, _ := mountStoreClient(t, opts)
	return dir
}

// mountStoreClient is mountStore with a client of the same server, to see
// the store as it is behind the mount.
func mountStoreClient(t *testing.T, opts fusefs.Options) (string, *client.Client) {
	t.Helper()
	needFUSE(t)
	log := slog.New(slog.DiscardHandler)
	d := memdev.New(512 << 20)
	if err := store.Mkfs(d, store.MkfsOptions{}); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(d, store.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "s.sock")
	srv, err := server.New(st, server.Options{Socket: sock, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background()) }()
	ctx := context.Background()
	var conns []*client.Client
	for range 3 {
		c, err := client.Dial(ctx, sock)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	dir := t.TempDir()
	m, err := fusefs.New(ctx, dir, conns[1:], opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Unmount(); err != nil {
			// A descriptor left open by a failed test: detach the mount
			// so that nothing hangs on it, and leave its server running
			// (waiting would wait for that descriptor).
			t.Errorf("%v (detached lazily)", err)
			unix.Unmount(dir, unix.MNT_DETACH)
			return
		}
		m.Wait()
		if err := srv.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		if err := <-done; err != nil && !errors.Is(err, server.ErrClosed) {
			t.Error(err)
		}
		if err := st.Sync(ctx); err != nil {
			t.Error(err)
		}
		if err := st.Check(); err != nil {
			t.Errorf("fsck: %v", err)
		}
		st.Close(ctx)
	})
	t.Cleanup(func() { conns[0].Close() })
	return dir, conns[0]
}
