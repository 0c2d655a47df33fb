package fusefs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"ustore/client"
)

// fuseDevice is the kernel's FUSE device (a variable for the test of its
// absence).
var fuseDevice = "/dev/fuse"

// A Mount is a store mounted at a directory, served until it is
// unmounted (by Unmount, `ustore umount` or fusermount3 -u).
type Mount struct {
	dir    string
	server *fuse.Server
	fsys   *FS
}

// New mounts the store that conns are connected to at dir, and serves it
// in the background until it is unmounted; Wait waits for that. The mount
// owns conns from here on: it closes them when it ends (or fails).
func New(ctx context.Context, dir string, conns []*client.Client, opts Options) (*Mount, error) {
	fsys := &FS{conns: conns, keepCache: opts.KeepCache}
	dir, err := CheckMountPoint(dir)
	if err == nil && len(conns) == 0 {
		err = errors.New("fusefs: no connection")
	}
	if err == nil {
		// The first connection holds the open files' handles.
		fsys.open = newOpenFiles(conns[0])
	}
	if err == nil {
		if _, err = fsys.conn().Stat(ctx, client.RootIno); err != nil {
			err = fmt.Errorf("fusefs: the store's root: %w", err)
		}
	}
	if err != nil {
		fsys.close()
		return nil, err
	}
	attr, entry := AttrTimeoutDefault, EntryTimeoutDefault
	if opts.AttrTimeout != nil {
		attr = *opts.AttrTimeout
	}
	if opts.EntryTimeout != nil {
		entry = *opts.EntryTimeout
	}
	mo := fuse.MountOptions{
		FsName: "ustore", Name: "ustore",
		// The server does not check the caller's permissions (it trusts
		// the peers it allows): the kernel checks mode bits instead.
		Options: []string{"default_permissions"},
		// As root, mount(2) directly; otherwise through fusermount3.
		DirectMount: true,
		MaxWrite:    maxWrite,
		Debug:       opts.Debug,
	}
	if opts.WritebackCache {
		mo.ExtraCapabilities |= fuse.CAP_WRITEBACK_CACHE
	}
	server, err := fs.Mount(dir, &node{fsys: fsys}, &fs.Options{
		MountOptions: mo,
		AttrTimeout:  &attr, EntryTimeout: &entry,
		// A name found missing is trusted as long as one found present.
		NegativeTimeout: &entry,
		RootStableAttr:  &fs.StableAttr{Ino: client.RootIno},
		// A mode of 0000 is the file's (chmod 0, rsync of such a file);
		// without this go-fuse shows it as 0644 (0755 for a directory).
		NullPermissions: true,
	})
	if err != nil {
		fsys.close()
		return nil, fmt.Errorf("fusefs: mount %s: %w", dir, err)
	}
	return &Mount{dir: dir, server: server, fsys: fsys}, nil
}

// Dir is the mount point, absolute.
func (m *Mount) Dir() string { return m.dir }

// Wait waits until the mount is unmounted, then closes its connections.
func (m *Mount) Wait() {
	m.server.Wait()
	m.fsys.close()
}

// Unmount detaches the mount: EBUSY while a program has a file or its
// working directory in it (the mount stays).
func (m *Mount) Unmount() error {
	if err := m.server.Unmount(); err != nil {
		return fmt.Errorf("fusefs: unmount %s: %w", m.dir, err)
	}
	return nil
}

// CheckMountPoint returns dir made absolute, or why it cannot be mounted
// on: ErrNoDevice, ErrNotDir, ErrBusy, or the error of its stat.
func CheckMountPoint(dir string) (string, error) {
	if _, err := os.Stat(fuseDevice); errors.Is(err, os.ErrNotExist) {
		return "", ErrNoDevice
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, syscall.ENOTCONN):
		// A FUSE mount whose server died: still mounted, answering nothing.
		return "", fmt.Errorf("%w: a FUSE mount whose server is gone is there (detach it with 'ustore umount %s')", ErrBusy, dir)
	case err != nil:
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("fusefs: %w", err)
	case !fi.IsDir():
		return "", ErrNotDir
	}
	if mounted, err := isMountPoint(abs); err != nil {
		return "", err
	} else if mounted {
		return "", fmt.Errorf("%w: something is mounted there already (detach it with 'ustore umount %s')", ErrBusy, dir)
	}
	return abs, nil
}

// isMountPoint reports whether dir is a mount point in this mount
// namespace (/proc/self/mountinfo's fifth field, with its octal escapes).
func isMountPoint(dir string) (bool, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false, fmt.Errorf("fusefs: %w", err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && unescapeMountinfo(f[4]) == dir {
			return true, nil
		}
	}
	return false, nil
}

// unescapeMountinfo undoes mountinfo's \ooo escapes (space, tab, newline,
// backslash).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// Unmount detaches the store mounted at dir (`ustore umount`): umount(2)
// as root, fusermount3 -u otherwise (it lets the user who mounted unmount).
// A dead mount (its server gone) is detached too.
func Unmount(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if mounted, err := isMountPoint(abs); err != nil {
		return err
	} else if !mounted {
		return ErrNotMounted
	}
	err = syscall.Unmount(abs, 0)
	if errors.Is(err, syscall.EPERM) {
		err = fusermount(abs)
	}
	if err != nil {
		return fmt.Errorf("fusefs: %w", err)
	}
	return nil
}

// fusermount runs fusermount3 -u (or fuse 2's fusermount).
func fusermount(dir string) error {
	for _, name := range []string{"fusermount3", "fusermount"} {
		path, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, path, "-u", dir).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s -u: %s", name, strings.TrimSpace(string(out)))
		}
		return nil
	}
	return errors.New("not root, and no fusermount3 to unmount as a user (apt-get install fuse3)")
}
