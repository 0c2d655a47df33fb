package main

// `ustore mount` and `ustore umount`: the store as a POSIX filesystem
// through FUSE (package fusefs), for programs that know nothing of
// ustore. The mount is a client of the server like the other commands,
// over several connections of the socket.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"ustore/client"
	"ustore/fusefs"
)

func newMountCommand() *cobra.Command {
	var cf clientFlags
	var conns int
	var opts fusefs.Options
	var attrTimeout, entryTimeout time.Duration
	c := &cobra.Command{
		Use:   "mount MOUNTPOINT",
		Short: "Mount the store at a directory (FUSE), until unmounted",
		Long: `Mount the store at MOUNTPOINT, an existing directory, through FUSE: every
program can then use it as a directory (cp, tar, git, fio, ...). mount stays
in the foreground and serves the mount until it is detached: by Ctrl-C or
SIGTERM, by 'ustore umount MOUNTPOINT', or by fusermount3 -u. A program
that still has a file or its working directory there keeps the mount
(EBUSY): close it, then detach again.

It needs /dev/fuse; as root it mounts directly, otherwise through
fusermount3 (Debian's fuse3 package). The kernel checks permissions
(default_permissions). Symbolic links, user.* extended attributes,
fallocate (mode 0, KEEP_SIZE, PUNCH_HOLE), renameat2's NOREPLACE and
EXCHANGE, and files unlinked while open (kept until their last close) are
the store's. Not supported, with the errno a Linux filesystem without them
gives: device, FIFO and socket nodes (EPERM), fallocate's other modes
(EOPNOTSUPP), RENAME_WHITEOUT (EINVAL). Caching and its trade-offs:
docs/FUSE.md.

The server is found at --socket: by default $USTORE_SOCKET, else
ustore-data/ustore.sock (where 'ustore serve' puts it). If the server
stops, requests fail with EIO until the store is mounted again.`,
		Example: `  mkdir -p /mnt/u && ustore mount /mnt/u &
  cp -r src /mnt/u/ && ustore umount /mnt/u`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if conns < 1 || conns > fusefs.ConnsMax {
				return usageError{fmt.Errorf("--conns %d: want 1 to %d", conns, fusefs.ConnsMax)}
			}
			if attrTimeout < 0 || entryTimeout < 0 {
				return usageError{errors.New("--attr-timeout and --entry-timeout cannot be negative")}
			}
			opts.AttrTimeout, opts.EntryTimeout = &attrTimeout, &entryTimeout
			return runMount(cmd, &cf, args[0], conns, opts)
		},
	}
	c.ValidArgsFunction = dirCompletions
	cf.addSocket(c)
	c.Flags().IntVar(&conns, "conns", fusefs.ConnsDefault, "connections to the server the mount spreads its requests over")
	c.Flags().DurationVar(&attrTimeout, "attr-timeout", fusefs.AttrTimeoutDefault, "how long the kernel trusts a file's attributes (0: ask each time)")
	c.Flags().DurationVar(&entryTimeout, "entry-timeout", fusefs.EntryTimeoutDefault, "how long the kernel trusts a name, found or missing (0: ask each time)")
	c.Flags().BoolVar(&opts.WritebackCache, "writeback-cache", false, "let the kernel buffer writes and send them later, in larger pieces")
	c.Flags().BoolVar(&opts.KeepCache, "keep-cache", false, "keep a file's cached pages across opens (changes by other clients may be missed)")
	c.Flags().BoolVar(&opts.Debug, "debug", false, "log every FUSE request")
	return c
}

// runMount mounts, serves until the mount is detached, and unmounts on
// SIGINT or SIGTERM.
func runMount(cmd *cobra.Command, cf *clientFlags, dir string, conns int, opts fusefs.Options) error {
	fail := func(err error) error {
		return &causeError{msg: "mount " + dir + ": " + strings.TrimPrefix(err.Error(), "fusefs: "), err: err}
	}
	// The mount point first: its errors need no server.
	if _, err := fusefs.CheckMountPoint(dir); err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), dialTimeout)
	defer cancel()
	var cs []*client.Client
	for range conns {
		c, err := client.Dial(ctx, cf.socket)
		if err != nil {
			for _, c := range cs {
				c.Close()
			}
			return cf.connectError(err)
		}
		cs = append(cs, c)
	}
	m, err := fusefs.New(ctx, dir, cs, opts)
	if err != nil {
		return fail(err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-sigs:
				if err := m.Unmount(); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "ustore: %s is busy (a program has a file or its working directory there): still mounted\n", m.Dir())
				}
			case <-done:
				return
			}
		}
	}()
	fmt.Fprintf(cmd.ErrOrStderr(), "ustore: mounted %s at %s; Ctrl-C or 'ustore umount %s' detaches it\n", cf.socket, m.Dir(), dir)
	m.Wait()
	close(done)
	return nil
}

func newUmountCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "umount MOUNTPOINT",
		Short: "Detach a store mounted with 'ustore mount'",
		Long: `Detach the store mounted at MOUNTPOINT: umount(2) as root, fusermount3 -u
otherwise. The 'ustore mount' serving it then exits 0. EBUSY while a
program has a file or its working directory there. A mount whose
'ustore mount' died (every access says "Transport endpoint is not
connected") is detached the same way.`,
		Example: `  ustore umount /mnt/u`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := fusefs.Unmount(args[0]); err != nil {
				msg := strings.TrimPrefix(err.Error(), "fusefs: ")
				if errors.Is(err, syscall.EBUSY) {
					msg = "busy: a program has a file or its working directory there"
				}
				return &causeError{msg: "umount " + args[0] + ": " + msg, err: err}
			}
			return nil
		},
	}
	c.ValidArgsFunction = dirCompletions
	return c
}

// dirCompletions completes a mount point: directories of the local
// filesystem.
func dirCompletions(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return nil, cobra.ShellCompDirectiveFilterDirs
}
