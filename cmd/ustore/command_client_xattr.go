package main

// The xattr command: a file's or directory's extended attributes (get,
// set, list, rm), as getfattr(1) and setfattr(1).

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"ustore/client"
	"ustore/proto"
)

const xattrLong = `

Names carry their namespace: the store keeps user.* attributes only (a set of
another namespace fails with "operation not supported"). A name is at most 255
bytes; a value at most what one tree item holds (4,045 bytes for a short name
at the default 16 KiB nodes; "no space left on device" past it).`

func newXattrCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "xattr",
		Short: "Get, set, list and remove extended attributes",
		Long: `Get, set, list and remove the extended attributes (xattr(7)) of the file or
directory at PATH.` + xattrLong + clientLong,
		Example: `  ustore xattr set /doc user.mime_type text/plain
  ustore xattr get /doc user.mime_type
  ustore xattr list /doc
  ustore xattr rm /doc user.mime_type`,
		Args: exactArgs(0),
	}
	c.AddCommand(newXattrGetCommand(), newXattrSetCommand(), newXattrListCommand(), newXattrRmCommand())
	return c
}

func newXattrGetCommand() *cobra.Command {
	var cf clientFlags
	c := &cobra.Command{
		Use:   "get PATH NAME",
		Short: "Print an extended attribute's value",
		Long: `Print the value of attribute NAME of PATH, as it is (no newline added).
An attribute that does not exist fails with "no data available".` + xattrLong + clientLong,
		Example: `  ustore xattr get /doc user.mime_type`,
		Args:    exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := storePath(args[0])
			return cf.runAt(cmd, "xattr get", p, func(s *session, a proto.Attr) error {
				r, err := s.c.GetXattr(s.ctx, a.Ino, args[1], proto.XattrSizeMax)
				if err != nil {
					return s.fail("xattr get", p+" "+args[1], err)
				}
				_, err = cmd.OutOrStdout().Write(r.Data)
				return err
			})
		},
	}
	c.ValidArgsFunction = completeArgs(&cf, false, argStore)
	cf.add(c)
	return c
}

func newXattrSetCommand() *cobra.Command {
	var cf clientFlags
	var create, replace bool
	c := &cobra.Command{
		Use:   "set PATH NAME [VALUE]",
		Short: "Set an extended attribute",
		Long: `Set attribute NAME of PATH to VALUE, or to standard input when VALUE is
absent. --create fails if the attribute exists ("file exists"), --replace if it
does not ("no data available"), as setxattr(2)'s XATTR_CREATE and
XATTR_REPLACE.` + xattrLong + clientLong,
		Example: `  ustore xattr set /doc user.mime_type text/plain
  ustore xattr set --create /doc user.origin "$(hostname)"
  printf 'a\0b' | ustore xattr set /doc user.binary`,
		Args: rangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if create && replace {
				return usageError{errors.New("--create and --replace exclude each other")}
			}
			var value []byte
			if len(args) == 3 {
				value = []byte(args[2])
			} else {
				b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), proto.XattrSizeMax+1))
				if err != nil {
					return fmt.Errorf("xattr set: reading the value from standard input: %w", err)
				}
				value = b
			}
			var flags uint32
			if create {
				flags |= client.XattrCreate
			}
			if replace {
				flags |= client.XattrReplace
			}
			p := storePath(args[0])
			return cf.runAt(cmd, "xattr set", p, func(s *session, a proto.Attr) error {
				return s.fail("xattr set", p+" "+args[1], s.c.SetXattr(s.ctx, a.Ino, args[1], value, flags))
			})
		},
	}
	c.ValidArgsFunction = completeArgs(&cf, false, argStore)
	cf.add(c)
	c.Flags().BoolVar(&create, "create", false, "fail if the attribute exists")
	c.Flags().BoolVar(&replace, "replace", false, "fail if the attribute does not exist")
	return c
}

func newXattrListCommand() *cobra.Command {
	var cf clientFlags
	c := &cobra.Command{
		Use:     "list PATH",
		Short:   "List extended attribute names",
		Long:    `List the names of PATH's extended attributes, one a line.` + xattrLong + clientLong,
		Example: `  ustore xattr list /doc`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := storePath(args[0])
			return cf.runAt(cmd, "xattr list", p, func(s *session, a proto.Attr) error {
				r, err := s.c.ListXattr(s.ctx, a.Ino, proto.XattrSizeMax)
				if err != nil {
					return s.fail("xattr list", p, err)
				}
				for name := range strings.SplitSeq(strings.TrimSuffix(string(r.Data), "\x00"), "\x00") {
					if name != "" {
						fmt.Fprintln(cmd.OutOrStdout(), name)
					}
				}
				return nil
			})
		},
	}
	c.ValidArgsFunction = completeArgs(&cf, false, argStore)
	cf.add(c)
	return c
}

func newXattrRmCommand() *cobra.Command {
	var cf clientFlags
	c := &cobra.Command{
		Use:   "rm PATH NAME",
		Short: "Remove an extended attribute",
		Long: `Remove attribute NAME of PATH; one that does not exist fails with "no data
available".` + xattrLong + clientLong,
		Example: `  ustore xattr rm /doc user.mime_type`,
		Args:    exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := storePath(args[0])
			return cf.runAt(cmd, "xattr rm", p, func(s *session, a proto.Attr) error {
				return s.fail("xattr rm", p+" "+args[1], s.c.RemoveXattr(s.ctx, a.Ino, args[1]))
			})
		},
	}
	c.ValidArgsFunction = completeArgs(&cf, false, argStore)
	cf.add(c)
	return c
}
