package main

// The client commands on links: ln (hard and symbolic) and readlink.

import (
	"path"
	"syscall"

	"github.com/spf13/cobra"

	"ustore/proto"
)

func newLnCommand() *cobra.Command {
	var cf clientFlags
	var symbolic, noTarget bool
	c := &cobra.Command{
		Use:   "ln [-s] TARGET LINKPATH",
		Short: "Make a hard link, or with -s a symbolic link",
		Long: `Make LINKPATH a new name of the file at TARGET (a hard link: one inode, two
names; directories cannot have one), or with -s a symbolic link at LINKPATH
whose target is the string TARGET, stored as given: it is not looked up, may
be relative (to the link's directory, for whoever follows it) and may
dangle. If LINKPATH is an existing directory, the link goes into it under
TARGET's last name (unless -T), as ln(1) does.

The store never follows a symbolic link: a path through one, as a
directory, fails with "too many levels of symbolic links" (ELOOP), and
every command on a path whose last name is a link acts on the link itself
(as lstat). A mount (ustore mount) follows links as any filesystem does. A
target is at most 4,095 bytes (PATH_MAX − 1) and what one tree item holds:
4,037 bytes at the default 16 KiB nodes, 965 at 4 KiB; past it, "file name
too long" (ENAMETOOLONG).` + clientLong,
		Example: `  ustore ln /data/report /latest           # a second name of the same file
  ustore ln -s report /data/current         # /data/current -> report
  ustore ln -s ../common /home/me/           # /home/me/common -> ../common
  ustore readlink /data/current`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			target, link := args[0], storePath(args[1])
			return cf.run(cmd, func(s *session) error {
				if !noTarget {
					if a, err := s.c.Resolve(s.ctx, link); err == nil && a.IsDir() {
						link = path.Join(link, path.Base(path.Clean("/"+target)))
					}
				}
				if symbolic {
					return s.symlink(target, link)
				}
				return s.link(storePath(target), link)
			})
		},
	}
	c.ValidArgsFunction = completeArgs(&cf, false, argStore, argStore)
	cf.add(c)
	c.Flags().BoolVarP(&symbolic, "symbolic", "s", false, "make a symbolic link whose target is TARGET, as given")
	c.Flags().BoolVarP(&noTarget, "no-target-directory", "T", false, "treat LINKPATH as a name even if it is a directory")
	return c
}

// symlink makes a symbolic link at link (clean, absolute) to target.
func (s *session) symlink(target, link string) error {
	dir, name, err := s.parent("ln", link)
	if err != nil {
		return err
	}
	_, err = s.c.Symlink(s.ctx, dir.Ino, name, target)
	return s.fail("ln", link, err)
}

// link makes link (clean, absolute) a new name of the inode at target.
func (s *session) link(target, link string) error {
	a, err := s.resolve("ln", target)
	if err != nil {
		return err
	}
	if a.IsDir() {
		return s.fail("ln", target, syscall.EPERM) // as link(2); ln(1) says "hard link not allowed for directory"
	}
	dir, name, err := s.parent("ln", link)
	if err != nil {
		return err
	}
	_, err = s.c.Link(s.ctx, a.Ino, dir.Ino, name)
	return s.fail("ln", link, err)
}

func newReadlinkCommand() *cobra.Command {
	var cf clientFlags
	c := &cobra.Command{
		Use:   "readlink PATH",
		Short: "Print a symbolic link's target",
		Long: `Print the target of the symbolic link at PATH, as it was stored, and a
newline. Anything else at PATH is "invalid argument" (EINVAL, as
readlink(2)), exit code 1.` + clientLong,
		Example: `  ustore readlink /data/current`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := storePath(args[0])
			return cf.runAt(cmd, "readlink", p, func(s *session, a proto.Attr) error {
				target, err := s.c.Readlink(s.ctx, a.Ino)
				if err != nil {
					return s.fail("readlink", p, err)
				}
				_, err = cmd.OutOrStdout().Write([]byte(target + "\n"))
				return err
			})
		},
	}
	c.ValidArgsFunction = completeArgs(&cf, false, argStore)
	cf.add(c)
	return c
}
